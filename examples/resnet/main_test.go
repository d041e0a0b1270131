package main

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
	"github.com/gray-ml/gray/internal/graytest"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/paramserver"
)

func TestMain(m *testing.M) {
	// Two GPUs as far as the scheduler knows (none is touched: the models
	// package computes on the CPU), so the GPU-aware placement is tested.
	graytest.Main(m, gray.Options{NumCPUs: 2, NumGPUs: 2})
}

// TestShortRun trains on a few hundred images with two workers and a
// sharded server: each worker reserves its own GPU, the loss falls and
// test accuracy rises above chance.
func TestShortRun(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	dir := fmtest.Dir(t, 600, 300)
	cfg := DefaultConfig()
	cfg.Dir, cfg.Workers, cfg.Shards, cfg.Batch, cfg.Steps = dir, 2, 2, 32, 40
	cfg.TrainLimit, cfg.TestLimit, cfg.EvalEvery, cfg.EvalN, cfg.LogEvery = 600, 300, 20, 300, 10
	cfg.Widths = []int{8, 16}
	res, err := Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss %.3f → %.3f, curve %+v, %.1f images/s", res.FirstLoss, res.Loss, res.Curve, res.ImagesPerSec)
	if res.Steps != 40 || res.Images != 1280 || len(res.Placement) != 2 || !res.GPUs {
		t.Fatalf("%d steps, %d images, placement %v", res.Steps, res.Images, res.Placement)
	}
	if !(res.Loss < 0.8*res.FirstLoss) {
		t.Fatalf("loss %.3f → %.3f did not fall", res.FirstLoss, res.Loss)
	}
	if res.TestAcc < 0.3 {
		t.Fatalf("test accuracy %.3f after 40 steps", res.TestAcc)
	}
	gpus := map[string]bool{}
	for _, p := range res.Placement {
		i := strings.Index(p, "reserved GPUs [")
		if i < 0 {
			t.Fatalf("placement %q names no GPU", p)
		}
		gpus[p[i:]] = true
	}
	if len(gpus) != 2 {
		t.Fatalf("workers share a GPU: %v", res.Placement)
	}
}

func TestBadConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workers, cfg.Batch, cfg.Steps = 3, 64, 1
	if _, err := Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "split evenly") {
		t.Fatalf("uneven batch: %v", err)
	}
	for _, threads := range []int{0, 99} {
		cfg = DefaultConfig()
		cfg.Threads, cfg.Steps = threads, 1
		if _, err := Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--threads") {
			t.Fatalf("threads %d: %v", threads, err)
		}
	}
	cfg = DefaultConfig()
	cfg.Dir, cfg.Steps = t.TempDir(), 1
	if _, err := Train(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), fashionmnist.Package) {
		t.Fatalf("missing data: %v", err)
	}
}

// A worker refuses to compute on weights of another version than the
// step's (a failed server step would otherwise go unnoticed).
func TestGradRefusesStaleWeights(t *testing.T) {
	ctx := context.Background()
	dir := fmtest.Dir(t, 64, 32)
	cfg := DefaultConfig()
	spec := WorkerSpec{Dir: dir, Count: 1, TrainLimit: 64, TestLimit: 32, Batch: 8, Seed: 1,
		Net: models.ResNetConfig{H: 28, W: 28, C: 1, Classes: 10, Widths: []int{4}, Blocks: 1}, WeightDecay: cfg.WeightDecay}
	w := startedWorker(t, spec, 3)
	if _, err := w.Grad(ctx, 1, 2); err == nil || !strings.Contains(err.Error(), "holds version 3 of shard 0's weights, want 2") {
		t.Fatalf("stale weights: got %v", err)
	}
	g, err := w.Grad(ctx, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(g[keyLoss]) != 1 || !(g[keyLoss][0] > 0) {
		t.Fatalf("gradient at the right version has loss %v", g[keyLoss])
	}
}

// startedWorker builds a worker in place (closed when t ends) and gives it
// its own initial weights as the given version.
func startedWorker(t *testing.T, spec WorkerSpec, version int64) *Worker {
	t.Helper()
	w, err := NewWorker(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	init := paramserver.Named{}
	p := w.net.Params()
	for i, name := range p.Names() {
		init[name] = p.Tensors()[i].Data
	}
	if _, err := w.SetWeights(context.Background(), 0, gray.SharedValue(paramserver.Pulled{Weights: init, Version: version})); err != nil {
		t.Fatal(err)
	}
	return w
}

// A worker with threads splits its batch over copies of the network: the
// same spec gives the same gradients and running statistics bit for bit,
// every copy ends a step with the merged statistics, and the first batch
// norm's merged running mean is the whole batch's (its input does not
// depend on the split).
func TestWorkerThreads(t *testing.T) {
	ctx := context.Background()
	dir := fmtest.Dir(t, 64, 32)
	spec := WorkerSpec{Dir: dir, Count: 1, TrainLimit: 64, TestLimit: 32, Batch: 16, Seed: 1,
		Net: models.ResNetConfig{H: 28, W: 28, C: 1, Classes: 10, Widths: []int{4, 8}, Blocks: 1}}
	grads := func(threads int) (*Worker, paramserver.Named) {
		spec := spec
		spec.Threads = threads
		w := startedWorker(t, spec, 1)
		var g paramserver.Named
		var err error
		for range 2 {
			if g, err = w.Grad(ctx, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		return w, g
	}
	one, _ := grads(1)
	a, ga := grads(3)
	b, gb := grads(3)
	for name, v := range ga {
		if name == keySeconds || name == keyCPU {
			continue
		}
		if !slices.Equal(v, gb[name]) {
			t.Fatalf("3 threads twice: %s differs", name)
		}
	}
	if !slices.Equal(a.net.Stats(), b.net.Stats()) {
		t.Fatal("3 threads twice: the running statistics differ")
	}
	for k, n := range a.nets[1:] {
		if !slices.Equal(n.Stats(), a.net.Stats()) {
			t.Errorf("copy %d's running statistics differ from the merged ones", k+1)
		}
	}
	want, got := one.net.BatchNorms()[0].RunMean, a.net.BatchNorms()[0].RunMean
	for c := range want {
		if math.Abs(got[c]-want[c]) > 1e-12*(1+math.Abs(want[c])) {
			t.Errorf("first batch norm, channel %d: merged running mean %v, one thread's %v", c, got[c], want[c])
		}
	}
	if slices.Equal(one.net.Stats(), a.net.Stats()) {
		t.Error("1 and 3 threads: the same running statistics in every layer (is the batch split at all?)")
	}
}
