// Command simple is the Go port of the seeds' hyperopt_simple.py: random
// hyperparameter search for a small CNN on Fashion-MNIST with remote
// tasks, processing each result as soon as it is ready (gray.Wait) and
// starting a new experiment in its place. The training and validation
// images are put into the object store once; every task reads them there.
//
//	apt-get install dataset-fashion-mnist
//	go run ./examples/hyperopt/simple --trials=5 --steps=10
//
// It prints one line per finished experiment, the best, the time and, last,
// the best model's accuracy on the Fashion-MNIST test set. With the seeds'
// space most draws diverge (learning rates up to 1e5) and stop at once; on
// the shared 2-core machine (loaded, 2026-11-25),
// go run ./examples/hyperopt/simple --trials=6 --steps=150 printed:
//
//	data: 10000 training, 2000 validation, 10000 test images; 2 in flight
//	accuracy 0.1000 (... 1 steps, diverged) with lr=3.16e+02 batch=55 dropout=0.12 stddev=1.14e-05
//	accuracy 0.1000 (... 1 steps, diverged) with lr=5.13e+02 batch=14 dropout=0.12 stddev=7.71e-01
//	accuracy 0.5210 (loss 73.61 → 16.21, 150 steps) with lr=2.42e-03 batch=9 dropout=0.05 stddev=7.85e-01
//	accuracy 0.1000 (... 1 steps, diverged) with lr=6.95e+01 batch=48 dropout=0.02 stddev=7.89e-04
//	accuracy 0.0980 (loss 2.31 → 2.31, 150 steps) with lr=1.61e-02 batch=16 dropout=0.35 stddev=3.12e-04
//	accuracy 0.1000 (... 0 steps, diverged) with lr=2.71e-04 batch=54 dropout=0.00 stddev=7.07e+03
//	best validation accuracy 0.5210 with lr=2.42e-03 batch=9 dropout=0.05 stddev=7.85e-01 in 35.7s
//	test accuracy: 0.5115
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/examples/hyperopt"
)

// config is one search.
type config struct {
	hyperopt.DataFlags
	Trials, Steps int
	Parallel      int
	Space         string
	Seed          uint64
}

// summary is what a search found.
type summary struct {
	Outcomes []hyperopt.Outcome
	Best     hyperopt.Outcome
	BestHP   hyperopt.Hyperparameters
	TestAcc  float64
	Elapsed  time.Duration
}

func run(ctx context.Context, cfg config, w io.Writer) (summary, error) {
	start := time.Now()
	space, ok := hyperopt.Spaces[cfg.Space]
	if !ok {
		return summary{}, fmt.Errorf("unknown space %q; use seeds or narrow", cfg.Space)
	}
	data, err := cfg.Load()
	if err != nil {
		return summary{}, err
	}
	fmt.Fprintf(w, "data: %d training, %d validation, %d test images; %d in flight\n", data.Train.Len(), data.Val.Len(), data.Test.Len(), cfg.Parallel)
	refs, err := data.Put(ctx)
	if err != nil {
		return summary{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	type experiment struct {
		hp    hyperopt.Hyperparameters
		out   gray.Ref[hyperopt.Outcome]
		model gray.Ref[hyperopt.Model]
	}
	byID := map[gray.ObjectID]experiment{}
	var remaining []gray.AnyRef
	launch := func(i int) {
		job := hyperopt.Job{HP: space.Generate(rng), Steps: cfg.Steps, Seed: cfg.Seed + uint64(i)}
		out, model := hyperopt.Segment.Remote(job, hyperopt.Model{}, refs.Train, refs.Val)
		byID[out.ID()] = experiment{job.HP, out, model}
		remaining = append(remaining, out)
	}
	launched := 0
	for ; launched < min(cfg.Parallel, cfg.Trials); launched++ {
		launch(launched)
	}
	var s summary
	var best experiment
	s.Best.Accuracy = -1
	for len(remaining) > 0 {
		// Whenever an experiment finishes, print its accuracy and start a
		// new one.
		ready, rest, err := gray.Wait(ctx, remaining, 1, 0)
		if err != nil {
			return s, err
		}
		remaining = rest
		e := byID[ready[0].ID()]
		o, err := gray.Get(ctx, e.out)
		if err != nil {
			return s, err
		}
		s.Outcomes = append(s.Outcomes, o)
		note := ""
		if o.Diverged {
			note = ", diverged"
		}
		fmt.Fprintf(w, "accuracy %.4f (loss %.2f → %.2f, %d steps%s) with %v\n", o.Accuracy, o.FirstLoss, o.LastLoss, o.Steps, note, e.hp)
		if o.Accuracy > s.Best.Accuracy {
			s.Best, s.BestHP, best = o, e.hp, e
		}
		if launched < cfg.Trials {
			launch(launched)
			launched++
		}
	}
	model, err := gray.Get(ctx, best.model)
	if err != nil {
		return s, err
	}
	s.TestAcc, err = hyperopt.Accuracy(s.BestHP, model, data.Test)
	// model's weights are read in place from the object store: its Ref must
	// stay reachable while they are read (see gray.Get's lifetime rule).
	runtime.KeepAlive(best.model)
	if err != nil {
		return s, err
	}
	s.Elapsed = time.Since(start)
	fmt.Fprintf(w, "best validation accuracy %.4f with %v in %.1fs\n", s.Best.Accuracy, s.BestHP, s.Elapsed.Seconds())
	return s, nil
}

func main() {
	gray.ServeIfWorker()
	var cfg config
	cfg.DataFlags.Register(flag.CommandLine)
	flag.IntVar(&cfg.Trials, "trials", 5, "number of experiments to run in all")
	flag.IntVar(&cfg.Steps, "steps", 10, "training steps (minibatches) per experiment")
	flag.IntVar(&cfg.Parallel, "parallel", 2, "experiments in flight at once")
	flag.StringVar(&cfg.Space, "space", "seeds", "search space: seeds (the seeds' ranges; most draws diverge) or narrow")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	flag.Parse()
	hyperopt.Main(func(ctx context.Context) (float64, error) {
		s, err := run(ctx, cfg, os.Stdout)
		return s.TestAcc, err
	})
}
