// Command adaptive is the Go port of the seeds' hyperopt_adaptive.py:
// training is divided into segments; whenever a segment finishes (gray.Wait)
// the experiment continues from its saved model if it still looks
// promising, and is otherwise dropped for a new experiment.
//
//	go run ./examples/hyperopt/adaptive --num-starting-segments=5 --num-segments=10 --steps-per-segment=20
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/examples/hyperopt"
)

// segment trains hp for steps more steps from model and returns the
// accuracy and the model to continue from (the seeds' two return values).
var segment = gray.Func3x2("hyperopt.train_segment",
	func(ctx context.Context, hp hyperopt.Hyperparameters, model hyperopt.Model, steps int) (float64, hyperopt.Model, error) {
		acc, m := hyperopt.Train(hp, &model, steps, 2*time.Millisecond, uint64(hp.BatchSize))
		return acc, m, nil
	})

type experiment struct {
	hp    hyperopt.Hyperparameters
	acc   gray.Ref[float64]
	model gray.Ref[hyperopt.Model]
	segs  int
}

func main() {
	gray.ServeIfWorker()
	starting := flag.Int("num-starting-segments", 5, "experiments started at once")
	segments := flag.Int("num-segments", 10, "segments to run in all")
	stepsPer := flag.Int("steps-per-segment", 20, "training steps per segment")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NoGPUs: true}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()

	rng := rand.New(rand.NewPCG(*seed, 0))
	byID := map[gray.ObjectID]*experiment{}
	var remaining []gray.Ref[float64]
	// from is a hyperopt.Model or a reference to one.
	run := func(e *experiment, from any) {
		e.acc, e.model = segment.Remote(e.hp, from, *stepsPer)
		e.segs++
		byID[e.acc.ID()] = e
		remaining = append(remaining, e.acc)
	}
	for range *starting {
		run(&experiment{hp: hyperopt.Generate(rng)}, hyperopt.Model{})
	}
	// is_promising: an experiment continues while its accuracy is in the
	// better half of the accuracies seen after the same number of segments.
	seen := map[int][]float64{}
	promising := func(e *experiment, acc float64) bool {
		prev := seen[e.segs]
		seen[e.segs] = append(prev, acc)
		if len(prev) < 2 {
			return true
		}
		s := append([]float64(nil), prev...)
		sort.Float64s(s)
		return acc >= s[len(s)/2]
	}
	best, bestHP := -1.0, hyperopt.Hyperparameters{}
	for done := 0; done < *segments && len(remaining) > 0; done++ {
		ready, rest, err := gray.Wait(ctx, remaining, 1, 0)
		if err != nil {
			log.Fatal(err)
		}
		remaining = rest
		e := byID[ready[0].ID()]
		delete(byID, ready[0].ID())
		acc, err := gray.Get(ctx, e.acc)
		if err != nil {
			log.Fatal(err)
		}
		if acc > best {
			best, bestHP = acc, e.hp
		}
		if promising(e, acc) {
			// Continue from the saved model: the model never comes back to
			// the driver; its reference is passed on.
			fmt.Printf("segment %d of %+v: accuracy %.3f, continuing\n", e.segs, e.hp, acc)
			run(e, e.model)
		} else {
			fmt.Printf("segment %d of %+v: accuracy %.3f, replaced\n", e.segs, e.hp, acc)
			run(&experiment{hp: hyperopt.Generate(rng)}, hyperopt.Model{})
		}
	}
	// Let the segments still in flight finish before shutting down.
	if len(remaining) > 0 {
		if _, _, err := gray.Wait(ctx, remaining, len(remaining), 0); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("best accuracy %.3f with %+v\n", best, bestHP)
}
