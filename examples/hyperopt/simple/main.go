// Command simple is the Go port of the seeds' hyperopt_simple.py: random
// hyperparameter search with remote tasks, processing each result as soon
// as it is ready (gray.Wait) and starting a new experiment in its place.
//
//	go run ./examples/hyperopt/simple --trials=5 --steps=10
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/examples/hyperopt"
)

// trainCNN trains one configuration and returns its validation accuracy.
var trainCNN = gray.Func2("hyperopt.train_cnn_and_compute_accuracy",
	func(ctx context.Context, hp hyperopt.Hyperparameters, steps int) (float64, error) {
		acc, _ := hyperopt.Train(hp, nil, steps, 10*time.Millisecond, uint64(hp.BatchSize))
		return acc, nil
	})

func main() {
	gray.ServeIfWorker()
	trials := flag.Int("trials", 5, "number of experiments to run in all")
	steps := flag.Int("steps", 10, "training steps per experiment")
	parallel := flag.Int("parallel", 2, "experiments in flight at once")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NoGPUs: true}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()

	rng := rand.New(rand.NewPCG(*seed, 0))
	configs := map[gray.ObjectID]hyperopt.Hyperparameters{}
	var remaining []gray.Ref[float64]
	launch := func() {
		hp := hyperopt.Generate(rng)
		ref := trainCNN.Remote(hp, *steps)
		configs[ref.ID()] = hp
		remaining = append(remaining, ref)
	}
	launched := 0
	for ; launched < min(*parallel, *trials); launched++ {
		launch()
	}
	best, bestHP := -1.0, hyperopt.Hyperparameters{}
	for len(remaining) > 0 {
		// Whenever an experiment finishes, print its accuracy and start a
		// new one.
		ready, rest, err := gray.Wait(ctx, remaining, 1, 0)
		if err != nil {
			log.Fatal(err)
		}
		remaining = rest
		ref := ready[0]
		acc, err := gray.Get(ctx, ref)
		if err != nil {
			log.Fatal(err)
		}
		hp := configs[ref.ID()]
		fmt.Printf("accuracy %.3f with %+v\n", acc, hp)
		if acc > best {
			best, bestHP = acc, hp
		}
		if launched < *trials {
			launch()
			launched++
		}
	}
	fmt.Printf("best accuracy %.3f with %+v\n", best, bestHP)
}
