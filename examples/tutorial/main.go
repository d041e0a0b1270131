// Command tutorial runs the examples of Ray 0.2's tutorial (sections 1.5
// and 1.6) on gray and prints what the documentation says they print.
package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"github.com/gray-ml/gray"
)

var (
	add2 = gray.Func2("tutorial.add2", func(ctx context.Context, a, b int) (int, error) { return a + b, nil })
	f    = gray.Func1("tutorial.f", func(ctx context.Context, x int) (int, error) { return x + 1, nil })
	f2   = gray.Func0("tutorial.f2", func(ctx context.Context) (int, error) {
		time.Sleep(time.Second)
		return 0, nil
	})
	returnMultiple = gray.Func0x3("tutorial.return_multiple", func(ctx context.Context) (int, int, int, error) {
		return 1, 2, 3, nil
	})
	generateData = gray.Func0("tutorial.generate_data", func(ctx context.Context) ([]float64, error) {
		x := make([]float64, 1000)
		for i := range x {
			x[i] = rand.NormFloat64()
		}
		return x, nil
	})
	aggregateData = gray.Func2("tutorial.aggregate_data", func(ctx context.Context, x, y []float64) ([]float64, error) {
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] + y[i]
		}
		return out, nil
	})
	subExperiment = gray.Func2("tutorial.sub_experiment", func(ctx context.Context, i, j int) (int, error) { return i + j, nil })
	runExperiment = gray.Func1("tutorial.run_experiment", func(ctx context.Context, i int) (int, error) {
		var subs []gray.Ref[int]
		for j := range 10 {
			subs = append(subs, subExperiment.Remote(i, j))
		}
		vals, err := gray.GetAll(ctx, subs)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vals {
			sum += v
		}
		return sum, nil
	})
	sleepN = gray.Func1("tutorial.f_sleep", func(ctx context.Context, n int) (int, error) {
		time.Sleep(time.Duration(n) * time.Second)
		return n, nil
	})
)

func main() {
	gray.ServeIfWorker()
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 10}); err != nil {
		log.Fatal(err)
	}
	defer gray.Shutdown()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	// 1.5.3 Put and Get.
	xID, err := gray.Put(ctx, "example")
	if err != nil {
		return err
	}
	fmt.Println("put:", xID.ID())
	x, err := gray.Get(ctx, xID)
	if err != nil {
		return err
	}
	fmt.Printf("%q\n", x) // "example"

	var resultIDs []gray.Ref[int]
	for i := range 10 {
		r, err := gray.Put(ctx, i)
		if err != nil {
			return err
		}
		resultIDs = append(resultIDs, r)
	}
	vals, err := gray.GetAll(ctx, resultIDs)
	if err != nil {
		return err
	}
	fmt.Println(vals) // [0 1 2 3 4 5 6 7 8 9]

	// 1.5.4 Remote functions.
	three, err := gray.Get(ctx, add2.Remote(1, 2))
	if err != nil {
		return err
	}
	fmt.Println(three) // 3

	t0 := time.Now()
	var naps []gray.Ref[int]
	for range 10 {
		naps = append(naps, f2.Remote())
	}
	if _, err := gray.GetAll(ctx, naps); err != nil {
		return err
	}
	fmt.Printf("ten 1-second tasks took %.1f s\n", time.Since(t0).Seconds()) // about 1 s with 10 CPUs

	one, _ := gray.Put(ctx, 1)
	two, _ := gray.Put(ctx, 2)
	same, err := gray.GetAll(ctx, []gray.Ref[int]{add2.Remote(1, 2), add2.Remote(1, two), add2.Remote(one, two)})
	if err != nil {
		return err
	}
	fmt.Println(same) // [3 3 3]

	a, b, c := returnMultiple.Remote()
	abc, err := gray.GetAll(ctx, []gray.Ref[int]{a, b, c})
	if err != nil {
		return err
	}
	fmt.Println(abc) // [1 2 3]

	// Dependencies.
	z, err := gray.Get(ctx, f.Remote(f.Remote(f.Remote(0))))
	if err != nil {
		return err
	}
	fmt.Println(z) // 3

	// Tree reduce.
	data := make([]gray.Ref[[]float64], 0, 100)
	for range 100 {
		data = append(data, generateData.Remote())
	}
	for len(data) > 1 {
		data = append(data[2:], aggregateData.Remote(data[0], data[1]))
	}
	sum, err := gray.Get(ctx, data[0])
	if err != nil {
		return err
	}
	fmt.Println("tree reduce of 100 arrays: length", len(sum))

	// Remote functions within remote functions.
	var results []gray.Ref[int]
	for i := range 5 {
		results = append(results, runExperiment.Remote(i))
	}
	nested, err := gray.GetAll(ctx, results)
	if err != nil {
		return err
	}
	fmt.Println(nested) // [45 55 65 75 85]

	// 1.6.5 Wait.
	var refs []gray.Ref[int]
	for i := range 3 {
		refs = append(refs, sleepN.Remote(i))
	}
	ready, remaining, err := gray.Wait(ctx, refs, 2, 0)
	if err != nil {
		return err
	}
	fmt.Println("wait: ready", len(ready), "remaining", len(remaining)) // 2 and 1
	refs = refs[:0]
	for i := range 5 {
		refs = append(refs, sleepN.Remote(i))
	}
	ready, remaining, err = gray.Wait(ctx, refs, 4, 2500*time.Millisecond)
	if err != nil {
		return err
	}
	fmt.Println("wait with timeout: ready", len(ready), "remaining", len(remaining)) // 3 and 2
	return nil
}
