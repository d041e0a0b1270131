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

// TestShortSearch runs a few segments on a few hundred images: experiments
// are both continued and replaced, and the best learns far above chance.
func TestShortSearch(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("training test: skipped under -race and -short; make test's non-race pass runs it")
	}
	cfg := config{DataFlags: hyperopt.DataFlags{Dir: fmtest.Dir(t, 700, 300), TrainN: 400, ValN: 200, TestN: 300}, Starting: 3, Segments: 6, StepsPer: 15, Space: "narrow", Seed: 2}
	s, err := run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.Continued == 0 || s.Continued+s.Replaced != 6 {
		t.Fatalf("%d continued, %d replaced of 6 segments", s.Continued, s.Replaced)
	}
	if s.Best.Accuracy < 0.4 || s.TestAcc < 0.35 {
		t.Fatalf("best %+v with %v after %d segments, test accuracy %.3f", s.Best, s.BestHP, s.BestSegs, s.TestAcc)
	}
}
