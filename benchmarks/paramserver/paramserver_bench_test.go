// Package paramserver_test measures the synchronous parameter server's
// round trip on models of 100 KB, 10 MB and 100 MB with 1, 2 and 4
// workers: every worker actor maps the current weights and returns a
// gradient of the same size (into the object store), the server averages
// the gradients, read in place in the store, and takes
// an SGD step, writing the new weights into the object store once, and the
// driver pulls them. Nothing is copied on the way (see the paramserver
// package's "Shipping weights without copies"). BenchmarkMemcpy moves
// the same bytes with copy() in the same run: the limit of this machine.
//
//	go test -run '^$' -bench . -benchtime 5x ./benchmarks/paramserver
//
// Figures are recorded in benchmarks/results/fashion-mnist.md.
package paramserver_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib/paramserver"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}

// worker is a stand-in for a training replica: it reads the weights (in
// place, through a paramserver.View) and returns a gradient of the same
// shape, so that only shipping is measured.
type worker struct {
	view paramserver.View
	grad paramserver.Named
}

var (
	workerType = gray.Actor0("psbench.Worker", func(ctx context.Context) (*worker, error) { return &worker{}, nil })
	setMethod  = gray.Method2(workerType, "SetWeights", func(w *worker, ctx context.Context, shard int, part gray.Shared[paramserver.Pulled]) (int64, error) {
		return w.view.Set(shard, part)
	})
	gradMethod = gray.Method0(workerType, "Grad", func(w *worker, ctx context.Context) (paramserver.Named, error) {
		weights := w.view.Weights()
		if w.grad == nil {
			w.grad = paramserver.Named{}
			for k, v := range weights {
				g := make([]float64, len(v))
				for i := range g {
					g[i] = 1e-3
				}
				w.grad[k] = g
			}
		}
		var s float64 // touch every page of the weights, as a forward pass would
		for _, v := range weights {
			for i := 0; i < len(v); i += 512 {
				s += v[i]
			}
		}
		w.grad["sum"] = []float64{s}
		return w.grad, nil
	})
)

// sizes are the model sizes in bytes.
var sizes = []struct {
	name  string
	bytes int
}{{"100KB", 100_000}, {"10MB", 10_000_000}, {"100MB", 100_000_000}}

// model splits n float64s over 4 keys (so that 2 shards can split it) and
// a 1-value key for the workers' checksum.
func model(bytes int) paramserver.Named {
	n := bytes / 8
	m := paramserver.Named{"sum": {0}}
	for k := 0; k < 4; k++ {
		m[fmt.Sprint("w", k)] = make([]float64, n/4)
	}
	return m
}

func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 8, NoGPUs: true}); err != nil {
		b.Fatal(err)
	}
	defer gray.Shutdown()
	for _, sz := range sizes {
		for _, shards := range []int{1, 2} {
			for _, nw := range []int{1, 2, 4} {
				if shards == 2 && sz.bytes < 10_000_000 {
					continue // sharding a 100 KB model only adds calls
				}
				b.Run(fmt.Sprintf("%s/shards=%d/workers=%d", sz.name, shards, nw), func(b *testing.B) {
					roundTrip(ctx, b, sz.bytes, shards, nw)
				})
			}
		}
	}
}

func roundTrip(ctx context.Context, b *testing.B, bytes, shards, nw int) {
	ps, err := paramserver.New(ctx, paramserver.Config{Shards: shards, Server: paramserver.ServerConfig{Optimizer: paramserver.OptSGD, LR: 0.1}}, model(bytes))
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	workers := make([]gray.Handle[worker], nw)
	for i := range workers {
		if workers[i], err = workerType.Remote(ctx); err != nil {
			b.Fatal(err)
		}
		defer gray.Kill(workers[i])
	}
	// One round: every worker reads the current weights in place (one
	// part per shard) and returns a gradient into the object store; every
	// shard reads the gradients in place, steps and writes its new weights
	// into the store once; the driver pulls them (mapped, not copied).
	weights, err := ps.PullRefs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	step := func() {
		grads := make([]gray.Ref[paramserver.Named], nw)
		for i, h := range workers {
			for s, part := range weights {
				setMethod.Remote(h, s, part)
			}
			grads[i] = gradMethod.Remote(h)
		}
		next, err := ps.Step(ctx, grads)
		if err != nil {
			b.Fatal(err)
		}
		pulled, err := gray.GetAll(ctx, next)
		if err != nil {
			b.Fatal(err)
		}
		if len(pulled[0].Weights) == 0 {
			b.Fatal("the step returned no weights")
		}
		_ = gray.Free(ctx, weights...)
		_ = gray.Free(ctx, grads...)
		weights = next
	}
	step() // warm up: workers allocate their gradients
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	// Bytes moved per round: weights out, nw gradients in, weights pulled.
	b.SetBytes(int64(bytes * (nw + 2)))
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/round")
}

// BenchmarkMemcpy copies the bytes of one round (weights out, nw
// gradients in, weights back) with copy() between two buffers allocated and
// touched once: the machine's copy limit when both sides are resident (a
// 10 MB pair stays in the last-level cache; a 100 MB pair does not).
func BenchmarkMemcpy(b *testing.B) {
	for _, sz := range sizes {
		for _, nw := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", sz.name, nw), func(b *testing.B) {
				src, dst := make([]byte, sz.bytes), make([]byte, sz.bytes)
				for i := range src {
					src[i] = byte(i)
				}
				copy(dst, src) // fault dst in before timing
				b.SetBytes(int64(sz.bytes * (nw + 2)))
				b.ResetTimer()
				for b.Loop() {
					for k := 0; k < nw+2; k++ {
						copy(dst, src)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/round")
			})
		}
	}
}

// BenchmarkMemcpyRemap copies the same bytes into a file in /dev/shm
// through a fresh read-write mapping each time (mapped with MAP_POPULATE,
// unmapped after the copy), the pages themselves allocated once: what
// writing an object into the store's reused pages costs at best. On a VM
// whose guest page tables are shadowed (PVM) the first write to each page
// of a new mapping traps, so this is far below BenchmarkMemcpy there.
func BenchmarkMemcpyRemap(b *testing.B) {
	for _, sz := range sizes {
		for _, nw := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", sz.name, nw), func(b *testing.B) {
				src := make([]byte, sz.bytes)
				for i := range src {
					src[i] = byte(i)
				}
				f, err := os.CreateTemp("/dev/shm", "psbench-*")
				if err != nil {
					b.Skip("no /dev/shm:", err)
				}
				defer os.Remove(f.Name())
				defer f.Close()
				if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(sz.bytes)); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(sz.bytes * (nw + 2)))
				for b.Loop() {
					for k := 0; k < nw+2; k++ {
						dst, err := unix.Mmap(int(f.Fd()), 0, sz.bytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
						if err != nil {
							b.Fatal(err)
						}
						copy(dst, src)
						if err := unix.Munmap(dst); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/round")
			})
		}
	}
}
