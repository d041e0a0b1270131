// Command adaptive is the Go port of Ray 0.2's hyperopt_adaptive.py:
// training a small CNN on Fashion-MNIST is divided into segments; whenever
// a segment finishes (gray.Wait) the experiment continues from its saved
// model if it still looks promising, and is otherwise dropped for a new
// experiment. Models travel between segments by reference: a segment's
// model goes into the object store and the next segment of the same
// experiment reads it there, never passing through the driver.
//
//	apt-get install dataset-fashion-mnist
//	go run ./examples/hyperopt/adaptive --num-starting-segments=5 --num-segments=10 --steps-per-segment=20
//
// It prints one line per segment, the best, the time and, last, the best
// model's accuracy on the Fashion-MNIST test set. On the shared 2-core
// machine (loaded, 2026-11-25), go run ./examples/hyperopt/adaptive
// --num-starting-segments=4 --num-segments=12 --steps-per-segment=50
// printed:
//
//	data: 10000 training, 2000 validation, 10000 test images
//	segment 1 of lr=3.16e+02 batch=55 dropout=0.12 stddev=1.14e-05: accuracy 0.1000, replaced
//	segment 1 of lr=5.13e+02 batch=14 dropout=0.12 stddev=7.71e-01: accuracy 0.1000, replaced
//	segment 1 of lr=2.42e-03 batch=9 dropout=0.05 stddev=7.85e-01: accuracy 0.2730, continuing
//	segment 1 of lr=1.61e-02 batch=16 dropout=0.35 stddev=3.12e-04: accuracy 0.5645, continuing
//	...
//	segment 3 of lr=1.61e-02 batch=16 dropout=0.35 stddev=3.12e-04: accuracy 0.7040, continuing
//	segment 3 of lr=2.42e-03 batch=9 dropout=0.05 stddev=7.85e-01: accuracy 0.4390, continuing
//	segment 4 of lr=1.61e-02 batch=16 dropout=0.35 stddev=3.12e-04: accuracy 0.6860, continuing
//	best validation accuracy 0.7040 (3 segments) with lr=1.61e-02 batch=16 dropout=0.35 stddev=3.12e-04 in 64.1s
//	test accuracy: 0.6953
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/examples/hyperopt"
)

// config is one search.
type config struct {
	hyperopt.DataFlags
	Starting, Segments int
	StepsPer           int
	Space              string
	Seed               uint64
}

// summary is what a search found.
type summary struct {
	Best     hyperopt.Outcome
	BestHP   hyperopt.Hyperparameters
	BestSegs int
	// Continued and Replaced count the decisions taken.
	Continued, Replaced int
	TestAcc             float64
	Elapsed             time.Duration
}

type experiment struct {
	hp    hyperopt.Hyperparameters
	out   gray.Ref[hyperopt.Outcome]
	model gray.Ref[hyperopt.Model]
	segs  int
	seed  uint64
}

func run(ctx context.Context, cfg config, w io.Writer) (summary, error) {
	start := time.Now()
	space, data, err := cfg.Open(cfg.Space)
	if err != nil {
		return summary{}, err
	}
	fmt.Fprintf(w, "data: %d training, %d validation, %d test images\n", data.Train.Len(), data.Val.Len(), data.Test.Len())
	refs, err := data.Put(ctx)
	if err != nil {
		return summary{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	byID := map[gray.ObjectID]*experiment{}
	var remaining []gray.AnyRef
	started := uint64(0)
	// from is a hyperopt.Model or a reference to one.
	segment := func(e *experiment, from any) {
		job := hyperopt.Job{HP: e.hp, Steps: cfg.StepsPer, Seed: e.seed, Threads: cfg.Threads}
		e.out, e.model = hyperopt.Segment.Remote(job, from, refs.Train, refs.Val)
		e.segs++
		byID[e.out.ID()] = e
		remaining = append(remaining, e.out)
	}
	fresh := func() {
		started++
		segment(&experiment{hp: space.Generate(rng), seed: cfg.Seed*1000 + started}, hyperopt.Model{})
	}
	for range cfg.Starting {
		fresh()
	}
	// is_promising: an experiment continues while it has not diverged and
	// its accuracy is in the better half of those seen after the same
	// number of segments.
	seen := map[int][]float64{}
	promising := func(e *experiment, o hyperopt.Outcome) bool {
		prev := seen[e.segs]
		seen[e.segs] = append(prev, o.Accuracy)
		if o.Diverged {
			return false
		}
		if len(prev) < 2 {
			return true
		}
		s := append([]float64(nil), prev...)
		sort.Float64s(s)
		return o.Accuracy >= s[len(s)/2]
	}
	var s summary
	s.Best.Accuracy = -1
	var bestModel gray.Ref[hyperopt.Model]
	for done := 0; done < cfg.Segments && len(remaining) > 0; done++ {
		ready, rest, err := gray.Wait(ctx, remaining, 1, 0)
		if err != nil {
			return s, err
		}
		remaining = rest
		e := byID[ready[0].ID()]
		delete(byID, ready[0].ID())
		o, err := gray.Get(ctx, e.out)
		if err != nil {
			return s, err
		}
		if o.Accuracy > s.Best.Accuracy {
			s.Best, s.BestHP, s.BestSegs, bestModel = o, e.hp, e.segs, e.model
		}
		if promising(e, o) {
			// Continue from the saved model: its reference is passed on.
			fmt.Fprintf(w, "segment %d of %v: accuracy %.4f, continuing\n", e.segs, e.hp, o.Accuracy)
			s.Continued++
			segment(e, e.model)
		} else {
			fmt.Fprintf(w, "segment %d of %v: accuracy %.4f, replaced\n", e.segs, e.hp, o.Accuracy)
			s.Replaced++
			fresh()
		}
	}
	// The segments still in flight are abandoned: free their results.
	if len(remaining) > 0 {
		if _, _, err := gray.Wait(ctx, remaining, len(remaining), 0); err != nil {
			return s, err
		}
	}
	model, err := gray.Get(ctx, bestModel)
	if err != nil {
		return s, err
	}
	s.TestAcc, err = hyperopt.Accuracy(s.BestHP, model, data.Test)
	// model's weights are read in place from the object store: its Ref must
	// stay reachable while they are read (see gray.Get's lifetime rule).
	runtime.KeepAlive(bestModel)
	if err != nil {
		return s, err
	}
	s.Elapsed = time.Since(start)
	fmt.Fprintf(w, "best validation accuracy %.4f (%d segments) with %v in %.1fs\n", s.Best.Accuracy, s.BestSegs, s.BestHP, s.Elapsed.Seconds())
	return s, nil
}

func main() {
	gray.ServeIfWorker()
	var cfg config
	cfg.DataFlags.Register(flag.CommandLine)
	flag.IntVar(&cfg.Starting, "num-starting-segments", 5, "experiments started at once")
	flag.IntVar(&cfg.Segments, "num-segments", 10, "segments to run in all")
	flag.IntVar(&cfg.StepsPer, "steps-per-segment", 20, "training steps (minibatches) per segment")
	flag.StringVar(&cfg.Space, "space", "wide", hyperopt.SpaceHelp)
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	flag.Parse()
	hyperopt.Main(func(ctx context.Context) (float64, error) {
		s, err := run(ctx, cfg, os.Stdout)
		return s.TestAcc, err
	})
}
