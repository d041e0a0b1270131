package transfer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/transfer/limits"
	"golang.org/x/sys/unix"
)

const benchSize = 64 << 20

// shmStore opens a store in /dev/shm (shared memory, as on a node) when it
// exists, else in a temporary directory.
func shmStore(b *testing.B, capacity int64) *objstore.Store {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "store")
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "gray-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = filepath.Join(d, "store")
	}
	s, err := objstore.Open(objstore.Options{Dir: dir, Capacity: capacity})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFetch64MiB moves a 64 MiB object from one node's store to
// another's over loopback: an authenticated pooled connection, the bytes
// read straight into the receiving store's shared memory. Each fetched copy
// is released after, so its pages are reused by the next (as on a node
// that keeps receiving objects).
func BenchmarkFetch64MiB(b *testing.B) {
	for _, streams := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchFetch(b, 4*benchSize, streams) })
	}
}

// BenchmarkFetch64MiBFreshPages is BenchmarkFetch64MiB on a receiving store
// too small to keep freed pages for reuse: every fetch allocates fresh
// shared memory, as the first objects a node receives do.
func BenchmarkFetch64MiBFreshPages(b *testing.B) {
	for _, streams := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchFetch(b, 2*benchSize, streams) })
	}
}

func benchFetch(b *testing.B, dstCapacity int64, streams int) {
	src, dst := shmStore(b, benchSize), shmStore(b, dstCapacity)
	id := objectID(64)
	putBytes(b, src, id, randomBytes(benchSize, 64))
	addr := serve(b, StoreSource(src))
	c := newClient(b)
	c.Streams = streams
	sink := StoreSink(dst)
	k := ObjectKey(id)
	b.SetBytes(benchSize)
	start := cpuTime()
	for b.Loop() {
		if err := c.Fetch(context.Background(), addr, k, sink); err != nil {
			b.Fatal(err)
		}
		if err := dst.Release(storeID(id)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
	reportReuse(b, dst)
}

// The peers of the Fetch benchmarks: the physical limits of a move over
// loopback (see package limits), measured in the same run.

// BenchmarkRawTCPCopy64MiB writes 64 MiB on one loopback TCP connection
// and reads it into a reused buffer on the other, with default socket
// settings and nothing else: the wire's limit.
func BenchmarkRawTCPCopy64MiB(b *testing.B) {
	benchLimit(b, func(c *limits.Copier, dst []byte) (time.Duration, error) { return c.TCP(dst) })
}

// BenchmarkRawTCPFreshShm64MiB is BenchmarkRawTCPCopy64MiB into a new
// shared-memory file: the limit of a fetch into fresh pages.
func BenchmarkRawTCPFreshShm64MiB(b *testing.B) {
	benchLimit(b, func(c *limits.Copier, _ []byte) (time.Duration, error) { return c.TCPFreshShm() })
}

// BenchmarkMemcpyFreshShm64MiB writes 64 MiB from memory into a new
// shared-memory file: the cost of fresh pages alone.
func BenchmarkMemcpyFreshShm64MiB(b *testing.B) {
	benchLimit(b, func(c *limits.Copier, _ []byte) (time.Duration, error) { return c.MemcpyFreshShm() })
}

func benchLimit(b *testing.B, measure func(*limits.Copier, []byte) (time.Duration, error)) {
	c, err := limits.NewCopier(benchSize, limits.ShmDir())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	dst := make([]byte, benchSize)
	if _, err := c.TCP(dst); err != nil { // touch dst's pages
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	start := cpuTime()
	for b.Loop() {
		if _, err := measure(c, dst); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkMemcpy64MiB copies 64 MiB in memory: the ceiling of any move.
func BenchmarkMemcpy64MiB(b *testing.B) {
	src := randomBytes(benchSize, 2)
	dst := make([]byte, benchSize)
	copy(dst, src) // fault the pages in
	b.SetBytes(benchSize)
	start := cpuTime()
	for b.Loop() {
		copy(dst, src)
	}
	reportCPU(b, start)
}

// cpuTime returns the CPU time (user + system) this process has used, in
// seconds: on a loaded machine, CPU per byte is steadier than wall time.
func cpuTime() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// reportCPU reports the CPU time per operation since start (both ends of
// the transfer run in this process).
func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((cpuTime()-start)*1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkFetch8x8MiB fetches 8 objects of 8 MiB from one server, one
// after another (one pooled connection) or all at once (parallel
// connections). Eight, because the receiving store keeps at most eight
// freed objects' pages for reuse.
func BenchmarkFetch8x8MiB(b *testing.B) {
	const n, size = 8, 8 << 20
	src, dst := shmStore(b, 2*n*size), shmStore(b, 8*n*size)
	var keys []Key
	for i := range n {
		id := objectID(uint64(1000 + i))
		putBytes(b, src, id, randomBytes(size, uint64(i)))
		keys = append(keys, ObjectKey(id))
	}
	addr := serve(b, StoreSource(src))
	sink := StoreSink(dst)
	release := func() {
		for i := range n {
			if err := dst.Release(storeID(objectID(uint64(1000 + i)))); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sequential", func(b *testing.B) {
		c := newClient(b)
		b.SetBytes(n * size)
		start := cpuTime()
		for b.Loop() {
			for _, k := range keys {
				if err := c.Fetch(context.Background(), addr, k, sink); err != nil {
					b.Fatal(err)
				}
			}
			release()
		}
		reportCPU(b, start)
		reportReuse(b, dst)
	})
	b.Run("parallel", func(b *testing.B) {
		c := newClient(b)
		c.MaxIdle = n
		b.SetBytes(n * size)
		start := cpuTime()
		for b.Loop() {
			errs := make(chan error, n)
			for _, k := range keys {
				go func() { errs <- c.Fetch(context.Background(), addr, k, sink) }()
			}
			for range keys {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			release()
		}
		reportCPU(b, start)
		reportReuse(b, dst)
	})
}

// reportReuse reports the share of bytes s created in reused pages (the
// rest took freshly allocated shared memory, which costs far more).
func reportReuse(b *testing.B, s *objstore.Store) {
	st := s.Stats()
	b.ReportMetric(float64(st.ReusedBytes)/float64(st.ReusedBytes+st.FreshBytes), "reused")
}
