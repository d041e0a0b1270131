package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/paramserver"
)

// Config is one training run.
type Config struct {
	Dir             string
	Workers, Shards int
	// Threads is each worker's goroutines (and the CPUs it reserves): its
	// slice of every batch is split into that many fixed parts
	// (WorkerSpec.Threads).
	Threads      int
	Batch        int
	Steps        int
	Budget       time.Duration
	LR, Momentum float64
	WeightDecay  float64
	// Decay lowers the learning rate linearly to 2% of LR over the run
	// (by Steps or by Budget, whichever ends it first).
	Decay                 bool
	Widths                []int
	Blocks                int
	TrainLimit, TestLimit int
	EvalEvery, EvalN      int
	LogEvery              int
	Seed                  uint64
	Log                   io.Writer
}

// DefaultConfig is a 3-stage network of widths 8, 16 and 32 trained with
// batches of 64 by momentum SGD.
func DefaultConfig() Config {
	return Config{Workers: 2, Shards: 1, Threads: 1, Batch: 64, LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, Decay: true,
		Widths: []int{8, 16, 32}, Blocks: 1, EvalEvery: 200, EvalN: 2000, LogEvery: 20, Seed: 1}
}

// Point is one evaluation: test accuracy after some training time.
type Point struct {
	Step    int
	Seconds float64
	TestAcc float64
}

// Result is what a run measured.
type Result struct {
	Steps, Images int
	Weights       int
	// Train is the training time (evaluations excluded).
	Train        time.Duration
	ImagesPerSec float64
	// ComputePerStep is the mean over steps of the slowest worker's
	// gradient time; ShipPerStep the rest of each step: putting and
	// mapping the weights, returning the gradients, the servers' apply and
	// the pull.
	ComputePerStep, ShipPerStep time.Duration
	// WorkerCPUPerStep is the CPU time a worker process used per step,
	// averaged over workers: well below ComputePerStep, the workers
	// waited for a core.
	WorkerCPUPerStep time.Duration
	// WeightBytes is the size of the weights shipped out each step; each
	// worker ships as many bytes of gradients back.
	WeightBytes     int
	FirstLoss, Loss float64
	TrainAcc        float64
	Curve           []Point
	TestAcc         float64
	Placement       []string
	GPUs            bool
}

// Train runs data-parallel training; gray must be initialised.
func Train(ctx context.Context, cfg Config) (Result, error) {
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format, args...)
		}
	}
	if cfg.Workers < 1 || cfg.Batch < cfg.Workers || cfg.Batch%cfg.Workers != 0 {
		return Result{}, fmt.Errorf("resnet: a global batch of %d cannot be split evenly over %d workers", cfg.Batch, cfg.Workers)
	}
	if cpus := gray.ClusterResources()["CPU"]; cfg.Threads < 1 || float64(cfg.Threads) > cpus {
		return Result{}, fmt.Errorf("resnet: --threads %d: give 1 to %.0f (the CPUs gray has; each worker reserves one CPU per thread)", cfg.Threads, cpus)
	}
	if cfg.Steps <= 0 && cfg.Budget <= 0 {
		return Result{}, errors.New("resnet: give a number of steps or a time budget")
	}
	netCfg := models.ResNetConfig{H: 28, W: 28, C: 1, Classes: 10, Widths: cfg.Widths, Blocks: cfg.Blocks}
	net, err := models.NewResNet(netCfg, cfg.Seed)
	if err != nil {
		return Result{}, err
	}
	p := net.Params()
	init := paramserver.Named{}
	for i, name := range p.Names() {
		init[name] = slices.Clone(p.Tensors()[i].Data)
	}
	res := Result{Weights: p.Len(), WeightBytes: 8 * p.Len()}
	logf("resnet widths %v, %d blocks per stage: %d weights (%.1f KiB); %d workers, batch %d (%d each), %d server shards\n",
		cfg.Widths, cfg.Blocks, p.Len(), float64(res.WeightBytes)/1024, cfg.Workers, cfg.Batch, cfg.Batch/cfg.Workers, max(cfg.Shards, 1))

	ps, err := paramserver.New(ctx, paramserver.Config{Shards: cfg.Shards,
		Server: paramserver.ServerConfig{Optimizer: paramserver.OptSGD, LR: cfg.LR, Momentum: cfg.Momentum}}, init)
	if err != nil {
		return Result{}, err
	}
	defer ps.Close()

	// GPU-aware placement: one GPU per worker when the machine has enough.
	opts := gray.ActorOptions{CPUs: float64(cfg.Threads)}
	if gray.ClusterResources()["GPU"] >= float64(cfg.Workers) {
		opts.GPUs = 1
		res.GPUs = true
	}
	workers := make([]gray.Handle[Worker], cfg.Workers)
	for i := range workers {
		spec := WorkerSpec{Dir: cfg.Dir, Index: i, Count: cfg.Workers, TrainLimit: cfg.TrainLimit, TestLimit: cfg.TestLimit,
			Batch: cfg.Batch / cfg.Workers, Net: netCfg, Seed: cfg.Seed, WeightDecay: cfg.WeightDecay, Threads: cfg.Threads}
		if workers[i], err = workerActor.RemoteWith(ctx, opts, spec); err != nil {
			return Result{}, fmt.Errorf("resnet: starting worker %d: %w", i, err)
		}
		defer gray.Kill(workers[i])
	}
	for _, h := range workers {
		info, err := gray.Get(ctx, infoMethod.Remote(h))
		if err != nil {
			return Result{}, err
		}
		res.Placement = append(res.Placement, info)
		logf("%s\n", info)
	}

	// The weights of the step to run: one reference per server shard.
	// Every step the workers read them in place (SetWeights), each
	// returns a gradient into the object store, every shard reads those in
	// place and writes its new weights into the store once (Step), and
	// those references go to the next step's workers: nothing is copied
	// and the driver never waits on the servers.
	weights, err := ps.PullRefs(ctx)
	if err != nil {
		return Result{}, err
	}
	var (
		compute, wall, cpu time.Duration
		lossSum            float64
		correct, seen      int
	)
	ship := func(h gray.Handle[Worker]) {
		for s, part := range weights {
			setMethod.Remote(h, s, part)
		}
	}
	// evaluate measures the current weights on worker 0's test images,
	// with its running batch-norm statistics.
	evaluate := func(n int) (float64, error) {
		ship(workers[0])
		return gray.Get(ctx, evalMethod.Remote(workers[0], n))
	}
	for step := 1; cfg.Steps <= 0 || step <= cfg.Steps; step++ {
		if cfg.Budget > 0 && wall >= cfg.Budget {
			break
		}
		t0 := time.Now()
		scale := 1.0
		if cfg.Decay {
			progress := 0.0
			if cfg.Steps > 0 {
				progress = float64(step-1) / float64(cfg.Steps)
			}
			if cfg.Budget > 0 {
				progress = max(progress, wall.Seconds()/cfg.Budget.Seconds())
			}
			scale = max(1-progress, 0.02)
		}
		grads := make([]gray.Ref[paramserver.Named], len(workers))
		for i, h := range workers {
			ship(h)
			grads[i] = gradMethod.Remote(h, scale, int64(step-1))
		}
		next, err := ps.Step(ctx, grads)
		if err != nil {
			return res, err
		}
		outs, err := gray.GetAll(ctx, grads)
		if err != nil {
			return res, err
		}
		slowest := 0.0
		for _, o := range outs {
			slowest = max(slowest, o[keySeconds][0])
			cpu += time.Duration(o[keyCPU][0] * float64(time.Second) / float64(len(workers)))
			lossSum += o[keyLoss][0]
			correct += int(o[keyCorrect][0])
		}
		// The old weights stay mapped by the workers until the next
		// SetWeights replaces them; freeing only ends the driver's claim.
		_ = gray.Free(ctx, weights...)
		_ = gray.Free(ctx, grads...)
		weights = next
		dt := time.Since(t0)
		wall += dt
		compute += time.Duration(slowest * float64(time.Second))
		res.Steps = step
		res.Images += cfg.Batch
		seen += cfg.Batch
		if step == 1 {
			res.FirstLoss = lossSum / float64(len(workers))
		}
		if cfg.LogEvery > 0 && step%cfg.LogEvery == 0 {
			res.Loss = lossSum / float64(cfg.LogEvery*len(workers))
			res.TrainAcc = float64(correct) / float64(seen)
			logf("step %4d  loss %.4f  train acc %.4f  %.1fs  %.1f images/s\n", step, res.Loss, res.TrainAcc, wall.Seconds(), float64(res.Images)/wall.Seconds())
			lossSum, correct, seen = 0, 0, 0
		}
		if cfg.EvalEvery > 0 && step%cfg.EvalEvery == 0 {
			acc, err := evaluate(cfg.EvalN)
			if err != nil {
				return res, err
			}
			res.Curve = append(res.Curve, Point{Step: step, Seconds: wall.Seconds(), TestAcc: acc})
			logf("eval: step %d, %.1fs of training: test accuracy %.4f\n", step, wall.Seconds(), acc)
		}
	}
	if seen > 0 && (cfg.LogEvery <= 0 || res.Steps < cfg.LogEvery) {
		res.Loss = lossSum / float64(res.Steps*len(workers))
		res.TrainAcc = float64(correct) / float64(seen)
	}
	if res.Steps == 0 {
		return res, errors.New("resnet: no training step ran; raise --budget or --steps")
	}
	res.Train = wall
	res.ImagesPerSec = float64(res.Images) / wall.Seconds()
	res.ComputePerStep = compute / time.Duration(res.Steps)
	res.ShipPerStep = (wall - compute) / time.Duration(res.Steps)
	res.WorkerCPUPerStep = cpu / time.Duration(res.Steps)
	if res.TestAcc, err = evaluate(0); err != nil {
		return res, err
	}
	res.Curve = append(res.Curve, Point{Step: res.Steps, Seconds: wall.Seconds(), TestAcc: res.TestAcc})
	logf("%d steps, %d images in %.1fs: %.1f images/s; per step: compute %.3fs (slowest worker; %.3fs of CPU per worker), shipping and applying %.3fs for %.1f KiB of weights out and %d × %.1f KiB of gradients in\n",
		res.Steps, res.Images, wall.Seconds(), res.ImagesPerSec, res.ComputePerStep.Seconds(), res.WorkerCPUPerStep.Seconds(), res.ShipPerStep.Seconds(),
		float64(res.WeightBytes)/1024, len(workers), float64(res.WeightBytes)/1024)
	return res, nil
}
