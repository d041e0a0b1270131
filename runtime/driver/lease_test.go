package driver_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// Leases for nested tasks (task.EnvLeases; runtime/worker/lease.go): a
// task's own submissions go to a worker it leased, not through the driver.

var (
	lSquare = gray.Func1("test.lease.square", func(_ context.Context, x int) (int, error) { return x * x, nil })
	// fanOut submits n squares without waiting and sums them.
	lFanOut = gray.Func1("test.lease.fanOut", func(ctx context.Context, n int) (int, error) {
		refs := make([]gray.Ref[int], n)
		for i := range refs {
			refs[i] = lSquare.Remote(i)
		}
		xs, err := gray.GetAll(ctx, refs)
		sum := 0
		for _, x := range xs {
			sum += x
		}
		return sum, err
	})
	// child writes its process ID to g+".started", waits for the gate
	// and returns its process ID.
	lChild = gray.Func1("test.lease.child", func(ctx context.Context, g string) (int, error) {
		if err := os.WriteFile(g+".started", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return 0, err
		}
		return os.Getpid(), gate(g).wait(ctx)
	})
	// parent writes its process ID to g+".parent" and returns its
	// child's result.
	lParent = gray.Func1("test.lease.parent", func(ctx context.Context, g string) (int, error) {
		if err := os.WriteFile(g+".parent", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return 0, err
		}
		return gray.Get(ctx, lChild.Remote(g))
	})
	lWaitGate = gray.Func1("test.lease.waitGate", func(ctx context.Context, g string) (int, error) { return 1, gate(g).wait(ctx) })
	// getGate waits, through a Get, for a task that waits for the gate.
	lGetGate  = gray.Func1("test.lease.getGate", func(ctx context.Context, g string) (int, error) { return gray.Get(ctx, lWaitGate.Remote(g)) })
	lOpenGate = gray.Func1("test.lease.openGate", func(_ context.Context, g string) (int, error) { return 2, os.WriteFile(g, nil, 0o644) })
	// both submits getGate, then openGate, and sums their results: the
	// first blocks until the second ran.
	lBoth = gray.Func1("test.lease.both", func(ctx context.Context, g string) (int, error) {
		xs, err := gray.GetAll(ctx, []gray.Ref[int]{lGetGate.Remote(g), lOpenGate.Remote(g)})
		if err != nil {
			return 0, err
		}
		return xs[0] + xs[1], nil
	})
	// farFanOut is fanOut on a node with the "far" resource.
	lFarFanOut = gray.Func1("test.lease.farFanOut", func(ctx context.Context, n int) (int, error) {
		return gray.Get(ctx, lFanOut.Remote(n))
	}, gray.Resource("far", 1))
)

// startLeases starts a session whose workers lease workers.
// It returns once the pool's two workers are connected: a lease is
// granted only on an idle worker (else the task goes through the driver).
func startLeases(t *testing.T) context.Context {
	t.Setenv(task.EnvLeases, "1")
	ctx := start(t, gray.Options{NumCPUs: 2, NoGPUs: true})
	clustertest.WaitFor(t, 30*time.Second, "the pool's workers to connect", func() bool {
		s := snapshot(t)
		return s.Starting == 0 && len(s.Workers) >= 2
	})
	return ctx
}

// leasedTo waits for the child to start and checks it runs on a lease.
func leasedTo(t *testing.T, g gate) int {
	t.Helper()
	pid := readPID(t, string(g)+".started")
	s := snapshot(t)
	w, ok := leaseHolder(s)
	if !ok {
		t.Fatalf("no worker holds a lease while the child runs: %+v", s.Workers)
	}
	if w.PID != pid {
		t.Fatalf("the lease is held by pid %d, the child runs in %d", w.PID, pid)
	}
	for _, x := range s.Tasks {
		if x.Func == "test.lease.child" {
			t.Fatalf("the driver holds the child (%s): it should go through the lease", x.State)
		}
	}
	return pid
}

// sumSquares is what fanOut(n) returns.
func sumSquares(n int) int { return (n - 1) * n * (2*n - 1) / 6 }

// readPID reads the process ID a task wrote to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	clustertest.WaitFor(t, 30*time.Second, file+" to be written", func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	})
	return pid
}

// leaseHolder returns the worker the snapshot shows holding a lease.
func leaseHolder(s state.Snapshot) (state.WorkerState, bool) {
	for _, w := range s.Workers {
		if strings.HasPrefix(w.Running, "(lease of ") {
			return w, true
		}
	}
	return state.WorkerState{}, false
}

func snapshot(t *testing.T) state.Snapshot {
	t.Helper()
	s, err := gray.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A task's children are exact through a lease, many at a time.
func TestLeasedNestedTasks(t *testing.T) {
	ctx := startLeases(t)
	for _, n := range []int{1, 17, 500} {
		if got, err := gray.Get(ctx, lFanOut.Remote(n)); err != nil || got != sumSquares(n) {
			t.Fatalf("fanOut(%d) = %d, %v; want %d", n, got, err, sumSquares(n))
		}
	}
}

// While a leased child runs, the driver knows nothing of it: a worker runs
// the lease, whose CPU counts as used; the lease goes back once idle.
func TestLeaseHoldsItsResources(t *testing.T) {
	ctx := startLeases(t)
	g := newGate(t, "child")
	r := lParent.Remote(string(g))
	childPID := leasedTo(t, g)
	// The parent's CPU may be lent out while it waits (lendAfter), the
	// lease's is held.
	if s := snapshot(t); s.Available.CPU > 1 {
		t.Errorf("%g CPUs free while a lease holds one of 2", s.Available.CPU)
	}
	g.open(t)
	if got, err := gray.Get(ctx, r); err != nil || got != childPID {
		t.Fatalf("parent = %d, %v; want the child's pid %d", got, err, childPID)
	}
	clustertest.WaitFor(t, 30*time.Second, "the lease to go back", func() bool {
		s := snapshot(t)
		_, held := leaseHolder(s)
		return !held && s.Available.CPU == 2
	})
}

// The leased worker is killed while it runs the child: the child runs
// again through the driver and the parent gets its result.
func TestLeasedWorkerKilled(t *testing.T) {
	ctx := startLeases(t)
	g := newGate(t, "child")
	r := lParent.Remote(string(g))
	killed := leasedTo(t, g)
	if err := os.Remove(string(g) + ".started"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	again := readPID(t, string(g)+".started")
	if again == killed {
		t.Fatalf("the child ran again in the killed process %d", killed)
	}
	g.open(t)
	if got, err := gray.Get(ctx, r); err != nil || got != again {
		t.Fatalf("parent = %d, %v; want the second run's pid %d", got, err, again)
	}
	if got, err := gray.Get(ctx, lFanOut.Remote(50)); err != nil || got != sumSquares(50) {
		t.Fatalf("fanOut after the kill = %d, %v", got, err)
	}
}

// The lease's owner is killed: the lease goes back and the worker it held
// lives on and serves the session.
func TestLeaseOwnerKilled(t *testing.T) {
	ctx := startLeases(t)
	g := newGate(t, "child")
	r := lParent.Remote(string(g))
	childPID := leasedTo(t, g)
	if err := syscall.Kill(readPID(t, string(g)+".parent"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, r); !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("the killed parent: %v, want ErrWorkerDied", err)
	}
	clustertest.WaitFor(t, 30*time.Second, "the dead owner's lease to go back", func() bool {
		_, held := leaseHolder(snapshot(t))
		return !held
	})
	alive := false
	for _, w := range snapshot(t).Workers {
		alive = alive || w.PID == childPID && w.Actor == ""
	}
	if !alive {
		t.Fatalf("the leased worker (pid %d) is not in the pool after its owner died", childPID)
	}
	g.open(t)
	if got, err := gray.Get(ctx, lFanOut.Remote(50)); err != nil || got != sumSquares(50) {
		t.Fatalf("fanOut after the owner died = %d, %v", got, err)
	}
	clustertest.WaitFor(t, 30*time.Second, "every CPU to be free", func() bool { return snapshot(t).Available.CPU == 2 })
}

// A leased task that waits in Get hands the task queued behind it back
// (it is what it waits for), and its owner, waiting for both, lends its
// CPU so that task can run: no deadlock where the driver's path has none.
func TestLeasedTaskBlockedGivesBack(t *testing.T) {
	ctx := startLeases(t)
	g := newGate(t, "gate")
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if got, err := gray.Get(cctx, lBoth.Remote(string(g))); err != nil || got != 3 {
		t.Fatalf("both = %d, %v; want 3", got, err)
	}
}

// On a cluster, a task on another node leases a worker (or, when none it
// can reach is idle, goes through the driver): the results are exact.
func TestClusterLeasedNestedTasks(t *testing.T) {
	t.Setenv(task.EnvLeases, "1")
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{1: {"far": 1}}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if got, err := gray.Get(ctx, lFarFanOut.Remote(200)); err != nil || got != sumSquares(200) {
		t.Fatalf("farFanOut(200) = %d, %v; want %d", got, err, sumSquares(200))
	}
}

var (
	lPID = gray.Func1("test.lease.pid", func(context.Context, int) (int, error) { return os.Getpid(), nil })
	// pids submits n children returning their process IDs and returns
	// how many ran in the process that ran most of them.
	lPIDs = gray.Func1("test.lease.pids", func(ctx context.Context, n int) (int, error) {
		refs := make([]gray.Ref[int], n)
		for i := range refs {
			refs[i] = lPID.Remote(i)
		}
		xs, err := gray.GetAll(ctx, refs)
		count := map[int]int{}
		most := 0
		for _, x := range xs {
			count[x]++
			most = max(most, count[x])
		}
		return most, err
	})
)

// Once its children are known to be short (the leased worker sends each
// run time back), a burst of a thousand of them runs on the lease alone,
// pipelined as deep as the driver would pack them, with the rest waiting
// in the owner: they do not go through the driver to other workers, though
// three CPUs are free for them there. (Before, 16 went to the lease and
// the rest through the driver.)
//
// What is short is measured, so a loaded machine moves it: a child
// preempted in a run, or slowed by the race detector beside a busy
// machine, reads long, and while it does the owner rightly sends the
// children through the driver. So each try first waits until a burst of
// 50 runs in one process (the child is short now), then sends a thousand;
// the test fails only if no try in a minute keeps 900 of them on the
// lease, which a lease that does not pipeline never does.
func TestLeasePipelinesShortTasks(t *testing.T) {
	t.Setenv(task.EnvLeases, "1")
	ctx := start(t, gray.Options{NumCPUs: 4, NoGPUs: true})
	clustertest.WaitFor(t, 30*time.Second, "the pool's workers to connect", func() bool {
		s := snapshot(t)
		return s.Starting == 0 && len(s.Workers) >= 4
	})
	burst := func(n int) int {
		t.Helper()
		most, err := gray.Get(ctx, lPIDs.Remote(n))
		if err != nil {
			t.Fatal(err)
		}
		return most
	}
	var runs []int
	for deadline := time.Now().Add(time.Minute); len(runs) == 0 || time.Now().Before(deadline); {
		// A lease runs one task at a time of a function not yet known
		// to be short, and the rest go through the driver; a fresh
		// worker's first runs read long (about seven short samples
		// bring the clamped first one under sched.PackShort).
		for i := 0; burst(50) < 50; i++ {
			if i == 200 {
				t.Fatalf("200 bursts of 50 short children never ran in one process")
			}
		}
		most := burst(1000)
		if most >= 900 {
			return
		}
		runs = append(runs, most)
	}
	t.Fatalf("no burst of 1000 short children in a minute ran on the lease: the most in one process per burst was %v; want at least 900", runs)
}
