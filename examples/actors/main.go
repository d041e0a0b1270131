// Command actors runs the examples of Ray 0.2's actors documentation (1.7)
// on gray and prints what the documentation says they print.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gray-ml/gray"
)

// Counter is the documentation's first actor.
type Counter struct{ value int }

var (
	counterType = gray.Actor0("actors.Counter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil })
	increment   = gray.Method0(counterType, "increment", func(c *Counter, ctx context.Context) (int, error) {
		c.value++
		return c.value, nil
	})
	getCounter = gray.Method0(counterType, "get_counter", func(c *Counter, ctx context.Context) (int, error) {
		return c.value, nil
	})
	// f uses an actor handle passed to it, as in "Passing Around Actor Handles".
	f = gray.Func1("actors.f", func(ctx context.Context, counter gray.Handle[Counter]) (int, error) {
		for range 100 {
			increment.Remote(counter)
			time.Sleep(time.Millisecond)
		}
		return 0, nil
	})

	// GPUActor reserves one GPU for its lifetime.
	gpuActorType = gray.Actor0("actors.GPUActor", func(ctx context.Context) (*GPUActor, error) {
		return &GPUActor{gpuIDs: gray.GPUIDs(ctx)}, nil
	}, gray.GPUs(1))
	gpuIDs = gray.Method0(gpuActorType, "gpu_ids", func(a *GPUActor, ctx context.Context) ([]int, error) {
		return a.gpuIDs, nil
	})
)

// GPUActor holds the GPUs it was given.
type GPUActor struct{ gpuIDs []int }

func main() {
	gray.ServeIfWorker()
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 4, NumGPUs: 2}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	a1, err := counterType.Remote(ctx)
	if err != nil {
		return err
	}
	a2, err := counterType.Remote(ctx)
	if err != nil {
		return err
	}
	v1, _ := gray.Get(ctx, increment.Remote(a1))
	v2, err := gray.Get(ctx, increment.Remote(a2))
	if err != nil {
		return err
	}
	fmt.Println(v1, v2) // 1 1

	counters := make([]gray.Handle[Counter], 10)
	for i := range counters {
		if counters[i], err = counterType.Remote(ctx); err != nil {
			return err
		}
	}
	var refs []gray.Ref[int]
	for _, c := range counters {
		refs = append(refs, increment.Remote(c))
	}
	results, err := gray.GetAll(ctx, refs)
	if err != nil {
		return err
	}
	fmt.Println(results) // [1 1 1 1 1 1 1 1 1 1]
	refs = refs[:0]
	for range 5 {
		refs = append(refs, increment.Remote(counters[0]))
	}
	if results, err = gray.GetAll(ctx, refs); err != nil {
		return err
	}
	fmt.Println(results) // [2 3 4 5 6]

	// Actors with GPUs: each gets its own GPU ID.
	g1, err := gpuActorType.Remote(ctx)
	if err != nil {
		return err
	}
	g2, err := gpuActorType.Remote(ctx)
	if err != nil {
		return err
	}
	ids1, _ := gray.Get(ctx, gpuIDs.Remote(g1))
	ids2, err := gray.Get(ctx, gpuIDs.Remote(g2))
	if err != nil {
		return err
	}
	fmt.Println("GPU actors got", ids1, ids2) // [0] [1] (in some order)
	_ = gray.Kill(g1)
	_ = gray.Kill(g2)

	// Passing around actor handles: four tasks increment one counter while
	// the driver reads it.
	counter, err := counterType.Remote(ctx)
	if err != nil {
		return err
	}
	var tasks []gray.Ref[int]
	for range 4 {
		tasks = append(tasks, f.Remote(counter))
	}
	for range 10 {
		v, err := gray.Get(ctx, getCounter.Remote(counter))
		if err != nil {
			return err
		}
		fmt.Println(v) // rising as the tasks run
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := gray.GetAll(ctx, tasks); err != nil {
		return err
	}
	final, err := gray.Get(ctx, getCounter.Remote(counter))
	if err != nil {
		return err
	}
	fmt.Println("final", final) // final 400
	return nil
}
