// Package runtime_test measures the runtime's core paths: remote calls and
// actor calls, synchronous and asynchronous, and small Put/Get. Run with
//
//	go test -run '^$' -bench . -benchtime 2s ./benchmarks/runtime
//
// Figures are recorded in benchmarks/results/runtime.md.
package runtime_test

import (
	"context"
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}

type counter struct{ n int }

var (
	noop        = gray.Func1("bench.noop", func(ctx context.Context, x int) (int, error) { return x, nil })
	counterType = gray.Actor0("bench.Counter", func(ctx context.Context) (*counter, error) { return &counter{}, nil })
	incr        = gray.Method1(counterType, "incr", func(c *counter, ctx context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

func setup(b *testing.B) context.Context {
	b.Helper()
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NoGPUs: true}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gray.Shutdown() })
	// Warm the pool up.
	if _, err := gray.Get(ctx, noop.Remote(0)); err != nil {
		b.Fatal(err)
	}
	return ctx
}

// BenchmarkTaskSync is one remote call and its Get, one at a time: the
// round trip.
func BenchmarkTaskSync(b *testing.B) {
	ctx := setup(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := gray.Get(ctx, noop.Remote(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkTaskAsync submits tasks in batches of 1,000, then gets them.
func BenchmarkTaskAsync(b *testing.B) {
	ctx := setup(b)
	b.ResetTimer()
	batch(b, ctx, func(i int) gray.Ref[int] { return noop.Remote(i) })
}

func batch(b *testing.B, ctx context.Context, submit func(int) gray.Ref[int]) {
	refs := make([]gray.Ref[int], 0, 1000)
	n := 0
	for b.Loop() {
		refs = append(refs, submit(n))
		n++
		if len(refs) == cap(refs) {
			if _, err := gray.GetAll(ctx, refs); err != nil {
				b.Fatal(err)
			}
			refs = refs[:0]
		}
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkActorSync is one actor method call and its Get, one at a time.
func BenchmarkActorSync(b *testing.B) {
	ctx := setup(b)
	h, err := counterType.Remote(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gray.Get(ctx, incr.Remote(h, 0)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := gray.Get(ctx, incr.Remote(h, 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkActorAsync submits method calls in batches of 1,000.
func BenchmarkActorAsync(b *testing.B) {
	ctx := setup(b)
	h, err := counterType.Remote(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gray.Get(ctx, incr.Remote(h, 0)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	batch(b, ctx, func(int) gray.Ref[int] { return incr.Remote(h, 1) })
}

// BenchmarkPutSmall puts one small value.
func BenchmarkPutSmall(b *testing.B) {
	ctx := setup(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := gray.Put(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkGetSmall gets one small, existing value.
func BenchmarkGetSmall(b *testing.B) {
	ctx := setup(b)
	r, err := gray.Put(ctx, 7)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := gray.Get(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// benchPut64MiB puts a 64 MiB array again and again; with free, each
// object is released with gray.Free once put, otherwise its Ref is just
// dropped and the garbage collector finds it.
func benchPut64MiB(b *testing.B, free bool) {
	ctx := setup(b)
	buf := make([]byte, 64<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for b.Loop() {
		r, err := gray.Put(ctx, buf)
		if err != nil {
			b.Fatal(err)
		}
		if free {
			if err := gray.Free(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPut64MiBFreed is the put loop of a program that frees what it
// is done with: the store reuses the same pages.
func BenchmarkPut64MiBFreed(b *testing.B) { benchPut64MiB(b, true) }

// BenchmarkPut64MiBDropped leaves freeing to the garbage collector.
func BenchmarkPut64MiBDropped(b *testing.B) { benchPut64MiB(b, false) }

// BenchmarkPutGetFree64MiB puts a 64 MiB array, gets it (zero-copy: the
// value points into the store's mapping), reads it, and frees it: the
// loop of a program that reads back what it put. The value is dropped
// before the next put, so the store may reuse its pages, once a garbage
// collection has shown that nothing points into them any more.
func BenchmarkPutGetFree64MiB(b *testing.B) {
	ctx := setup(b)
	buf := make([]float64, 8<<20)
	b.SetBytes(64 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		buf[0] = float64(i)
		r, err := gray.Put(ctx, buf)
		if err != nil {
			b.Fatal(err)
		}
		v, err := gray.Get(ctx, r)
		if err != nil || v[0] != float64(i) {
			b.Fatalf("get: %v", err)
		}
		if err := gray.Free(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// result64MiB is the array bigResult returns: made once per worker, so
// the benchmark measures storing the result, not allocating it.
var result64MiB = make([]byte, 64<<20)

var bigResult = gray.Func1("bench.bigResult", func(ctx context.Context, x int) ([]byte, error) {
	return result64MiB, nil
})

// BenchmarkTaskResult64MiB runs a task returning a 64 MiB array, waits for
// it and frees it: the worker writes the result into room the driver
// reserves, reusing freed pages.
func BenchmarkTaskResult64MiB(b *testing.B) {
	ctx := setup(b)
	b.SetBytes(64 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r := bigResult.Remote(i)
		if _, _, err := gray.Wait(ctx, []gray.AnyRef{r}, 1, 0); err != nil {
			b.Fatal(err)
		}
		if err := gray.Free(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutVaryingFreed alternates puts of 56 and 64 MiB arrays, each
// freed once put: the pages of a freed object serve the next put of a
// somewhat different size too.
func BenchmarkPutVaryingFreed(b *testing.B) {
	ctx := setup(b)
	bufs := [][]byte{make([]byte, 56<<20), make([]byte, 64<<20)}
	b.SetBytes(60 << 20)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r, err := gray.Put(ctx, bufs[i%2])
		if err != nil {
			b.Fatal(err)
		}
		if err := gray.Free(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
