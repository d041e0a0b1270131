package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"github.com/gray-ml/gray"
)

// queuedProbe submits n no-op tasks while an actor holds every CPU of the
// session (so they all stay queued in the driver, at any --cpus), and
// prints how long queueing took and the driver's heap per queued task;
// then it lets them run and checks every result.
func queuedProbe(ctx context.Context, out io.Writer, n int) error {
	total := gray.ClusterResources()["CPU"]
	hog, err := mbCounter.RemoteWith(ctx, gray.ActorOptions{CPUs: total})
	if err != nil {
		return fmt.Errorf("an actor to hold all %g CPUs: %w", total, err)
	}
	if _, err := gray.Get(ctx, mbIncr.Remote(hog, 1)); err != nil {
		return err
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	refs := make([]gray.Ref[int], n)
	cpu0 := selfCPU()
	t0 := time.Now()
	for i := range refs {
		refs[i] = mbNoop.Remote(i)
	}
	queued := time.Since(t0)
	cpu := selfCPU() - cpu0
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTask := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
	fmt.Fprintf(out, "%-66s %14.2f s  (%.0f tasks/s)\n", fmt.Sprintf("queue %d no-op tasks behind an actor holding all %g CPUs", n, total), queued.Seconds(), float64(n)/queued.Seconds())
	fmt.Fprintf(out, "%-66s %14.2f s\n", "  driver CPU time while queueing (user + system)", cpu.Seconds())
	fmt.Fprintf(out, "%-66s %14.0f bytes\n", "  driver heap per queued task", perTask)
	if err := gray.Kill(hog); err != nil {
		return err
	}
	t1 := time.Now()
	vals, err := gray.GetAll(ctx, refs)
	if err != nil {
		return err
	}
	for i, v := range vals {
		if v != i {
			return fmt.Errorf("queued task %d returned %d", i, v)
		}
	}
	fmt.Fprintf(out, "%-66s %14.2f s\n", "  then all run", time.Since(t1).Seconds())
	return nil
}

// selfCPU returns this process's CPU time so far (user + system, every
// thread): on a loaded machine the queueing's wall time counts the other
// processes' turns too, its CPU time does not.
func selfCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return tv(u.Utime) + tv(u.Stime)
}
