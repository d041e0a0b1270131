package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/transfer/limits"
)

// BenchmarkClusterObject64MiB moves 64 MiB arrays between the nodes of a
// loopback cluster (the array made on node 1, as in
// TestClusterObjectMovesNodeToNode), beside the physical limits of such a
// move measured in the same run (package limits):
//
//   - node-to-driver/fresh: the driver's Get of an array on node 1, pulled
//     into pages its store has not used before (each array is kept until
//     the end);
//   - node-to-driver/reused: the same, each array freed after its Get, so
//     the next one reuses its pages (steady state: after two untimed
//     rounds, the pages are kept mapped);
//   - node-to-node: a task on node 2 that takes the array (its worker
//     pulls it from node 1 into node 2's store, fresh pages, then maps it);
//     this includes the task's round trip, well under a millisecond;
//   - raw-tcp-reused, raw-tcp-fresh-shm, memcpy-fresh-shm: the limits.
//
// Making each array on node 1 is not timed. Run it with -benchtime=5x or
// so: each iteration of a fresh case keeps 64 MiB on two nodes.
func BenchmarkClusterObject64MiB(b *testing.B) {
	c := clustertest.Start(b, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"maker": 1}, 2: {"user": 1},
	}})
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token(), ObjectStoreMemory: 2 << 30, NoTimeline: true}); err != nil {
		b.Fatal(err)
	}
	defer gray.Shutdown()
	clustertest.WaitFor(b, 30*time.Second, "the cluster to have 3 CPUs", func() bool { return gray.ClusterResources()["CPU"] >= 3 })
	if _, err := gray.Get(ctx, warmUser.Remote()); err != nil { // start node 2's worker
		b.Fatal(err)
	}

	seed := 0.0
	// made returns a new array made on node 1, once it exists there.
	made := func(b *testing.B) gray.Ref[[]float64] {
		b.StopTimer()
		defer b.StartTimer()
		seed++
		x := makeBig.Remote(seed)
		if _, _, err := gray.Wait(ctx, []gray.Ref[[]float64]{x}, 1, time.Minute); err != nil {
			b.Fatal(err)
		}
		return x
	}
	get := func(b *testing.B, x gray.Ref[[]float64]) {
		y, err := gray.Get(ctx, x)
		if err != nil {
			b.Fatal(err)
		}
		if len(y) != bigLen || y[0] != seed || y[bigLen-1] != seed+bigLen-1 {
			b.Fatalf("the driver got %d elements, y[0]=%g, want %g", len(y), y[0], seed)
		}
	}
	// The fresh rows' arrays stay until the end, so that no later Get
	// (of this row's next round either) reuses their pages.
	var keep []gray.Ref[[]float64]
	defer func() { _ = gray.Free(ctx, keep...) }()
	b.Run("node-to-driver/fresh", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for range b.N {
			x := made(b)
			get(b, x)
			keep = append(keep, x)
		}
	})
	getFree := func(b *testing.B) {
		x := made(b)
		get(b, x)
		if err := gray.Free(ctx, x); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("node-to-driver/reused", func(b *testing.B) {
		// Steady state: the first Get takes fresh pages, the second maps
		// the first's (once); from then on each reads into a mapped spare.
		getFree(b)
		getFree(b)
		b.ResetTimer()
		b.SetBytes(64 << 20)
		for range b.N {
			getFree(b)
		}
	})
	b.Run("node-to-node", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for range b.N {
			x := made(b)
			if _, err := gray.Get(ctx, checkBig.Remote(x, seed)); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := gray.Free(ctx, x); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	cp, err := limits.NewCopier(64<<20, limits.ShmDir())
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
	dst := make([]byte, 64<<20)
	if _, err := cp.TCP(dst); err != nil { // touch dst's pages
		b.Fatal(err)
	}
	for _, l := range []struct {
		name    string
		measure func() (time.Duration, error)
	}{
		{"raw-tcp-reused", func() (time.Duration, error) { return cp.TCP(dst) }},
		{"raw-tcp-fresh-shm", cp.TCPFreshShm},
		{"memcpy-fresh-shm", cp.MemcpyFreshShm},
	} {
		b.Run(l.name, func(b *testing.B) {
			b.SetBytes(64 << 20)
			for range b.N {
				if _, err := l.measure(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
