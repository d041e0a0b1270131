package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/paramserver"
)

func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	// Two GPUs as far as the scheduler knows (none is touched: the models
	// package computes on the CPU), so the GPU-aware placement is tested.
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 2, NumGPUs: 2}); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	gray.Shutdown()
	os.Exit(code)
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
	w, err := NewWorker(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	init := paramserver.Named{}
	p := w.net.Params()
	for i, name := range p.Names() {
		init[name] = p.Tensors()[i].Data
	}
	if _, err := w.SetWeights(ctx, 0, gray.SharedValue(paramserver.Pulled{Weights: init, Version: 3})); err != nil {
		t.Fatal(err)
	}
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
