package main

import (
	"context"
	"io"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist/fmtest"
	"github.com/gray-ml/gray/examples/hyperopt"
	"github.com/gray-ml/gray/internal/graytest"
)

func TestMain(m *testing.M) {
	graytest.Main(m, gray.Options{NumCPUs: 2, NoGPUs: true})
}

// TestShortSearch runs the search on a few hundred images: every
// experiment reports, the best learns far above chance (0.1) and its loss
// fell.
func TestShortSearch(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	cfg := config{DataFlags: hyperopt.DataFlags{Dir: fmtest.Dir(t, 700, 300), TrainN: 400, ValN: 200, TestN: 300}, Trials: 3, Steps: 30, Parallel: 2, Space: "narrow", Seed: 1}
	s, err := run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Outcomes) != 3 {
		t.Fatalf("%d outcomes for 3 trials", len(s.Outcomes))
	}
	if s.Best.Accuracy < 0.4 || s.TestAcc < 0.35 || !(s.Best.LastLoss < s.Best.FirstLoss) {
		t.Fatalf("best %+v with %v, test accuracy %.3f", s.Best, s.BestHP, s.TestAcc)
	}
	if _, err := run(context.Background(), config{Space: "huge"}, io.Discard); err == nil {
		t.Fatal("unknown space accepted")
	}
}
