package main

import (
	"context"
	"io"
	"testing"

	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
	"github.com/gray-ml/gray/examples/hyperopt"
)

// TestShortSearch runs a few trials on a few hundred images through tune
// with ASHA: some trials are stopped early, the best learns far above
// chance (0.1).
func TestShortSearch(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	dir := fmtest.Dir(t, 700, 300)
	cfg := config{DataFlags: hyperopt.DataFlags{Dir: dir, TrainN: 400, ValN: 200, TestN: 300}, ExpDir: t.TempDir() + "/exp", Samples: 4, MaxIters: 3, StepsPer: 12, Parallel: 2, Space: "narrow", Seed: 3}
	s, err := run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.Trials != 4 || s.Stopped == 0 || s.Iterations >= 4*3 {
		t.Fatalf("%d trials, %d stopped early, %d iterations: ASHA stopped none", s.Trials, s.Stopped, s.Iterations)
	}
	if s.BestAcc < 0.4 || s.TestAcc < 0.35 {
		t.Fatalf("best validation accuracy %.3f with %v, test accuracy %.3f", s.BestAcc, s.BestHP, s.TestAcc)
	}
}

func TestHyperparametersFromConfig(t *testing.T) {
	hp, err := hpFrom(map[string]any{"learning_rate": 0.01, "batch_size": 32, "dropout": 0.5, "stddev": 0.1})
	if err != nil || hp.BatchSize != 32 || hp.LearningRate != 0.01 {
		t.Fatalf("hpFrom = %v, %v", hp, err)
	}
	if _, err := hpFrom(map[string]any{"learning_rate": 0.01}); err == nil {
		t.Fatal("missing keys accepted")
	}
}
