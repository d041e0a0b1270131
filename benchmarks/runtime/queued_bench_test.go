package runtime_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// hog holds every CPU of the session until its file appears, so that the
// tasks submitted meanwhile stay queued in the driver.
var hog = gray.Func1("bench.hog", func(ctx context.Context, path string) (int, error) {
	for {
		if _, err := os.Stat(path); err == nil {
			return 0, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}, gray.CPUs(2))

// BenchmarkQueuedTaskMemory queues tiny tasks behind one that holds every
// CPU and reports the driver's heap per queued task (references, task
// specifications and the runtime's records together). QUEUED sets how many
// (default 100,000); run it with -benchtime 1x. QUEUED_CPU_PROFILE and
// QUEUED_HEAP_PROFILE name files for a CPU profile of the queueing alone
// and for the heap's live objects once the tasks are queued.
func BenchmarkQueuedTaskMemory(b *testing.B) {
	n := 100_000
	if s := os.Getenv("QUEUED"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx := setup(b)
	for b.Loop() {
		path := b.TempDir() + "/go"
		h := hog.Remote(path)
		// The tasks below queue once the hog holds every CPU.
		for deadline := time.Now().Add(30 * time.Second); gray.AvailableResources()["CPU"] > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("the hog did not start within 30 s: %g CPUs still free", gray.AvailableResources()["CPU"])
			}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		refs := make([]gray.Ref[int], n)
		stop := startCPUProfile(b, os.Getenv("QUEUED_CPU_PROFILE"))
		faults := minorFaults()
		start := time.Now()
		for i := range refs {
			refs[i] = noop.Remote(i)
		}
		queued := time.Since(start)
		faults = minorFaults() - faults
		stop()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/queued-task")
		// Counts that the machine's load does not move: what queueing
		// allocates, and the fresh pages it touches (each a minor fault).
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n), "allocs/queued-task")
		b.ReportMetric(float64(faults)/float64(n)*1000, "page-faults/1k-queued")
		if out := os.Getenv("QUEUED_HEAP_PROFILE"); out != "" {
			writeHeapProfile(b, out)
		}
		b.ReportMetric(float64(n)/queued.Seconds(), "queued/s")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := gray.Get(ctx, h); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if _, err := gray.GetAll(ctx, refs); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/(queued+time.Since(start)).Seconds(), "tasks/s")
	}
}

// writeHeapProfile writes the heap's live objects now to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// minorFaults returns this process's minor page faults so far.
func minorFaults() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Minflt
}

// startCPUProfile starts a CPU profile into path ("": none) and returns
// what stops it.
func startCPUProfile(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
