// Command asha runs the hyperparameter search of Ray 0.2's example
// through tune: each trial trains the small Fashion-MNIST CNN one segment
// per iteration and reports its validation accuracy; the ASHA scheduler
// (asynchronous successive halving) stops the trials whose accuracy is not
// in the top 1/reduction-factor at each rung, so the budget goes to the
// promising ones.
//
//	apt-get install dataset-fashion-mnist
//	go run ./examples/hyperopt/asha --samples=12 --max-iters=9 --steps-per-iter=20
//
// It prints one line per result, one per trial, the best, the time and,
// last, the test accuracy of the model that reached the best validation
// accuracy. On the shared 2-core machine (loaded, 2026-11-25),
// go run ./examples/hyperopt/asha --samples=8 --max-iters=9 --steps-per-iter=50
// printed (the per-result lines left out):
//
//	data: 10000 training, 2000 validation, 10000 test images; 2 trials at once
//	trial 00000: TERMINATED after 1 iterations, val accuracy 0.0495 with lr=3.79e-05 batch=50 dropout=0.91 stddev=2.23e-01
//	trial 00001: TERMINATED after 1 iterations, val accuracy 0.1000 with lr=5.11e+02 batch=3 dropout=0.73 stddev=5.20e+04
//	...
//	trial 00004: TERMINATED after 9 iterations, val accuracy 0.7300 with lr=1.60e-04 batch=94 dropout=0.27 stddev=6.56e-02
//	...
//	8 trials (7 stopped early by ASHA), 16 iterations in all; best validation accuracy 0.7300 with lr=1.60e-04 batch=94 dropout=0.27 stddev=6.56e-02 (best last result: trial 00004) in 151.4s
//	test accuracy: 0.7254
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"sync"
	"time"

	"github.com/gray-ml/gray/examples/hyperopt"
	"github.com/gray-ml/gray/tune"
)

// config is one search.
type config struct {
	hyperopt.DataFlags
	ExpDir            string
	Samples, MaxIters int
	StepsPer          int
	Parallel          int
	Space             string
	Seed              int64
}

// summary is what a search found.
type summary struct {
	Trials, Iterations int
	BestAcc            float64
	BestHP             hyperopt.Hyperparameters
	TestAcc            float64
	Elapsed            time.Duration
	// Stopped counts trials ASHA ended before MaxIters.
	Stopped int
}

// hpFrom reads the hyperparameters out of a trial's config.
func hpFrom(c map[string]any) (hyperopt.Hyperparameters, error) {
	get := func(k string) (float64, error) {
		v, ok := tune.ResultFloat(c, k)
		if !ok {
			return 0, fmt.Errorf("config lacks a number %q", k)
		}
		return v, nil
	}
	var hp hyperopt.Hyperparameters
	var err error
	var bs float64
	if hp.LearningRate, err = get("learning_rate"); err != nil {
		return hp, err
	}
	if bs, err = get("batch_size"); err != nil {
		return hp, err
	}
	hp.BatchSize = int(bs)
	if hp.Dropout, err = get("dropout"); err != nil {
		return hp, err
	}
	if hp.Stddev, err = get("stddev"); err != nil {
		return hp, err
	}
	return hp, hp.Validate()
}

func run(ctx context.Context, cfg config, w io.Writer) (summary, error) {
	start := time.Now()
	space, data, err := cfg.Open(cfg.Space)
	if err != nil {
		return summary{}, err
	}
	fmt.Fprintf(w, "data: %d training, %d validation, %d test images; %d trials at once\n", data.Train.Len(), data.Val.Len(), data.Test.Len(), cfg.Parallel)
	expDir := cfg.ExpDir
	if expDir == "" {
		tmp, err := os.MkdirTemp("", "hyperopt-asha-")
		if err != nil {
			return summary{}, err
		}
		defer os.RemoveAll(tmp)
		expDir = tmp + "/exp"
	}
	// The best model seen in any result, for the final test accuracy.
	var (
		mu        sync.Mutex
		bestAcc   = -1.0
		bestHP    hyperopt.Hyperparameters
		bestModel hyperopt.Model
	)
	trainable := tune.FuncTrainable(func(ctx context.Context, c map[string]any, report tune.ReportFunc) error {
		hp, err := hpFrom(c)
		if err != nil {
			return err
		}
		seed := uint64(hp.BatchSize) ^ uint64(hp.LearningRate*1e9)
		var model hyperopt.Model
		for it := 1; ; it++ {
			o, next, err := hyperopt.TrainThreads(hp, model, data.Train, data.Val, cfg.StepsPer, seed, max(1, cfg.Threads))
			if err != nil {
				return err
			}
			model = next
			mu.Lock()
			if o.Accuracy > bestAcc {
				bestAcc, bestHP, bestModel = o.Accuracy, hp, next
			}
			fmt.Fprintf(w, "iter %d: val accuracy %.4f with %v\n", it, o.Accuracy, hp)
			mu.Unlock()
			if err := report(map[string]any{"val_accuracy": o.Accuracy, "train_loss": o.LastLoss, "diverged": o.Diverged, "steps": o.Steps}); err != nil {
				return nil // the scheduler stopped this trial
			}
			if o.Diverged {
				return nil // nothing more to learn
			}
		}
	})
	asha, err := tune.NewASHA(tune.ASHAConfig{MaxT: float64(cfg.MaxIters), GracePeriod: 1, ReductionFactor: 3})
	if err != nil {
		return summary{}, err
	}
	a, err := tune.Run(ctx, tune.Experiment{
		Dir:       expDir,
		Trainable: trainable,
		Space: map[string]any{
			"learning_rate": tune.LogUniform{Lo: pow10(space.LogLRLo), Hi: pow10(space.LogLRHi)},
			"batch_size":    tune.RandInt{Lo: space.BatchLo, Hi: space.BatchHi},
			"dropout":       tune.Uniform{Lo: 0, Hi: space.DropoutHi},
			"stddev":        tune.LogUniform{Lo: pow10(space.LogStdLo), Hi: pow10(space.LogStdHi)},
		},
		NumSamples:    cfg.Samples,
		Seed:          cfg.Seed,
		Scheduler:     asha,
		Metric:        "val_accuracy",
		Mode:          tune.Max,
		Stop:          map[string]float64{"training_iteration": float64(cfg.MaxIters)},
		Resources:     tune.Resources{CPU: 1},
		NodeResources: tune.Resources{CPU: float64(cfg.Parallel)},
	})
	if err != nil {
		return summary{}, err
	}
	var s summary
	s.Trials = len(a.Trials)
	for _, t := range a.Trials {
		s.Iterations += t.Iteration
		if t.Iteration < cfg.MaxIters {
			s.Stopped++
		}
		acc, _ := t.Metric("val_accuracy")
		fmt.Fprintf(w, "trial %s: %s after %d iterations, val accuracy %.4f with %v\n", t.ID, t.Status, t.Iteration, acc, c2s(t.Config))
	}
	best, err := a.Best("val_accuracy", tune.Max)
	if err != nil {
		return s, err
	}
	s.BestAcc, s.BestHP = bestAcc, bestHP
	if s.TestAcc, err = hyperopt.Accuracy(bestHP, bestModel, data.Test); err != nil {
		return s, err
	}
	s.Elapsed = time.Since(start)
	fmt.Fprintf(w, "%d trials (%d stopped early by ASHA), %d iterations in all; best validation accuracy %.4f with %v (best last result: trial %s) in %.1fs\n",
		s.Trials, s.Stopped, s.Iterations, s.BestAcc, s.BestHP, best.ID, s.Elapsed.Seconds())
	return s, nil
}

func c2s(c map[string]any) string {
	hp, err := hpFrom(c)
	if err != nil {
		return fmt.Sprint(c)
	}
	return hp.String()
}

func pow10(x float64) float64 { return math.Pow(10, x) }

func main() {
	var cfg config
	cfg.DataFlags.Register(flag.CommandLine)
	flag.StringVar(&cfg.ExpDir, "dir", "", "experiment folder (default: a temporary one, removed after)")
	flag.IntVar(&cfg.Samples, "samples", 12, "trials (configurations) to try")
	flag.IntVar(&cfg.MaxIters, "max-iters", 9, "iterations (segments) of the longest trials")
	flag.IntVar(&cfg.StepsPer, "steps-per-iter", 20, "training steps (minibatches) per iteration")
	flag.IntVar(&cfg.Parallel, "parallel", 2, "trials running at once")
	flag.StringVar(&cfg.Space, "space", "wide", hyperopt.SpaceHelp)
	flag.Int64Var(&cfg.Seed, "seed", 1, "random seed")
	flag.Parse()
	s, err := run(context.Background(), cfg, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy: %.4f\n", s.TestAcc)
}
