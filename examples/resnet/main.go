// Command resnet is the Go port of Ray 0.2's ResNet example (section
// 1.15), on Fashion-MNIST: data-parallel training of a small residual
// network (models.ResNet: a 3×3 stem, residual stages with batch
// normalisation, global average pooling, a dense layer).
//
// Each worker actor holds a shard of the training set and a replica of the
// network. Every step each worker reads the current weights in place in the
// object store (one part per server shard, through a paramserver.View),
// computes the gradient on its slice of the global batch and returns it
// into the object store; the synchronous parameter server
// (rllib/paramserver, sharded over --shards actors) reads the gradients in
// place, averages them, takes one momentum-SGD step and writes its new
// weights into the store once, and their references go straight to the
// next step's workers. Nothing is copied on the way, and the driver only
// waits for the gradients' metrics. With --threads N each worker reserves
// N CPUs and splits its slice over N copies of the network; their batch
// norms' running statistics are merged after each step
// (models.MergeRunningStats).
// Workers ask for one GPU each when gray finds GPUs (gray.ClusterResources)
// and run on CPUs otherwise; the models package computes on the CPU either
// way, and the example says which it did.
//
//	apt-get install dataset-fashion-mnist
//	go run ./examples/resnet --workers=2 --budget=10m
//
// It prints the placement, progress every --log-every steps, test accuracy
// (on the first --eval-n test images) every --eval-every steps against
// training time, throughput, the weight-shipping cost per step, and last
// the accuracy on the whole test set; --plot=FILE.svg also draws the
// accuracy against training time. On the shared 2-core machine
// (loaded, 2026-11-25), go run ./examples/resnet --workers=2 --budget=12m
// --eval-every=150 --eval-n=2000 --log-every=50 printed:
//
//	resnet widths [8 16 32], 1 blocks per stage: 19810 weights (154.8 KiB); 2 workers, batch 64 (32 each), 1 server shards
//	worker 0: CPU
//	worker 1: CPU
//	step   50  loss 1.5778  train acc 0.4453  22.1s  144.8 images/s
//	...
//	eval: step 150, 61.8s of training: test accuracy 0.6535
//	...
//	eval: step 1500, 707.7s of training: test accuracy 0.8765
//	1558 steps, 99712 images in 720.1s: 138.5 images/s; per step: compute 0.404s (slowest worker), shipping and applying 0.058s for 154.8 KiB of weights out and 2 × 154.8 KiB of gradients in
//	test accuracy: 0.8704
//
// Given 65 minutes (--budget=65m, 10.5 epochs) the same run reached test
// accuracy 0.9211; benchmarks/results/fashion-mnist.md has the curve.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/platform/plot"
)

func main() {
	gray.ServeIfWorker()
	cfg := DefaultConfig()
	var widths string
	flag.StringVar(&cfg.Dir, "data", "", "Fashion-MNIST directory (default /usr/share/datasets/fashion-mnist)")
	flag.IntVar(&cfg.Workers, "workers", 2, "worker actors (data-parallel replicas)")
	flag.IntVar(&cfg.Shards, "shards", 1, "parameter-server shards")
	flag.IntVar(&cfg.Threads, "threads", cfg.Threads, "goroutines (and CPUs) per worker: each worker's batch is split into that many fixed parts, batch norm's running statistics merged after each step")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "global batch size, split evenly over the workers")
	flag.IntVar(&cfg.Steps, "steps", 0, "training steps (0: until --budget)")
	flag.DurationVar(&cfg.Budget, "budget", 5*time.Minute, "training time budget (evaluation excluded; 0: none)")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "SGD learning rate")
	flag.Float64Var(&cfg.Momentum, "momentum", cfg.Momentum, "SGD momentum")
	flag.Float64Var(&cfg.WeightDecay, "wd", cfg.WeightDecay, "weight decay")
	flag.BoolVar(&cfg.Decay, "decay", cfg.Decay, "decay the learning rate linearly to 2% over the run")
	flag.StringVar(&widths, "widths", "8,16,32", "channels of each residual stage")
	flag.IntVar(&cfg.Blocks, "blocks", cfg.Blocks, "residual blocks per stage")
	flag.IntVar(&cfg.TrainLimit, "train-limit", 0, "use only the first N training images (0: all)")
	flag.IntVar(&cfg.TestLimit, "test-limit", 0, "use only the first N test images (0: all)")
	flag.IntVar(&cfg.EvalEvery, "eval-every", 200, "evaluate every N steps (0: only at the end)")
	flag.IntVar(&cfg.EvalN, "eval-n", 2000, "test images for the periodic evaluations (0: all)")
	flag.IntVar(&cfg.LogEvery, "log-every", 20, "print the training loss every N steps")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	plotFile := flag.String("plot", "", "also draw test accuracy against training time into this .png or .svg file")
	gpus := flag.Int("gpus", 0, "GPUs to train on (0: CPUs; batch normalisation has no GPU kernel yet)")
	flag.Parse()
	if *gpus != 0 {
		// The GPU backend (models/cuda) has dense and convolutional
		// layers but not yet ResNet's batch normalisation and pooling.
		log.Fatal(&models.NoDeviceKernelError{Layer: "ResNet's batch normalisation", Fix: "run with --gpus 0 to train on the CPU"})
	}
	cfg.Widths = nil
	for _, f := range strings.Split(widths, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("--widths %q: %v", widths, err)
		}
		cfg.Widths = append(cfg.Widths, n)
	}
	cfg.Log = os.Stdout
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()
	res, err := Train(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if *plotFile != "" {
		if err := savePlot(*plotFile, res); err != nil {
			log.Print(err)
		}
	}
	fmt.Printf("test accuracy: %.4f\n", res.TestAcc)
}

// savePlot draws the run's test accuracy against its training time.
func savePlot(file string, res Result) error {
	c := plot.Curve{Label: "test accuracy"}
	for _, p := range res.Curve {
		c.X = append(c.X, p.Seconds/60)
		c.Y = append(c.Y, p.TestAcc)
	}
	return plot.Save([]plot.Curve{c}, file, plot.Options{Metric: "test accuracy", X: "training time (minutes)",
		Title: fmt.Sprintf("examples/resnet: %d weights, %d images", res.Weights, res.Images), Width: 6, Height: 3.5})
}
