package driver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/state"
)

// linLen is the length of the arrays of the lineage tests: 2 MiB of
// float64s, so a by-value argument is put into shared memory by the driver
// and a result stays on the node that made it.
const linLen = 256 << 10

// linStep adds k to every element, on a "lin" node, and says where it ran.
var linStep = gray.Func2x2("test.cluster.linStep", func(ctx context.Context, x []float64, k float64) ([]float64, string, error) {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v + k
	}
	return out, os.Getenv(cluster.EnvNodeID), nil
}, gray.Resource("lin", 1))

// An actor on the head that a task reads a base from, and a box that
// carries a reference inside a by-value argument.
type (
	linBase struct{ base float64 }
	linBox  struct{ R gray.Ref[[]float64] }
)

var (
	linBaseActor = gray.Actor0("test.cluster.linBase", func(ctx context.Context) (*linBase, error) {
		return &linBase{base: 100}, nil
	}, gray.Resource("head", 1))
	linBaseGet = gray.Method0(linBaseActor, "get", func(b *linBase, ctx context.Context) (float64, error) { return b.base, nil })
	// linFromActor makes an array of i + the actor's base, on a "lin" node.
	linFromActor = gray.Func1("test.cluster.linFromActor", func(ctx context.Context, h gray.Handle[linBase]) ([]float64, error) {
		base, err := gray.Get(ctx, linBaseGet.Remote(h))
		if err != nil {
			return nil, err
		}
		x := linInput()
		for i := range x {
			x[i] += base
		}
		return x, nil
	}, gray.Resource("lin", 1))
	// linUnbox adds 1 to the array its argument refers to, on a "lin" node.
	linUnbox = gray.Func1("test.cluster.linUnbox", func(ctx context.Context, b linBox) ([]float64, error) {
		x, err := gray.Get(ctx, b.R)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = v + 1
		}
		return out, nil
	}, gray.Resource("lin", 1))
)

// checkLin checks that x[i] == i + add for every i.
func checkLin(t *testing.T, what string, x []float64, add float64) {
	t.Helper()
	if len(x) != linLen {
		t.Fatalf("%s: %d elements, want %d", what, len(x), linLen)
	}
	for i, v := range x {
		if v != float64(i)+add {
			t.Fatalf("%s: element %d is %g, want %g", what, i, v, float64(i)+add)
		}
	}
}

func linInput() []float64 {
	x := make([]float64, linLen)
	for i := range x {
		x[i] = float64(i)
	}
	return x
}

// A task called with a large value (not a Ref: the driver puts it into
// shared memory for the call and drops it once the task is sent) whose
// result lived only on a node that is then killed: the result is rebuilt
// from lineage, so its argument must have been kept for it. Alone, at the
// start of a chain whose middle the program dropped, and read by a task
// submitted after the death.
func TestClusterByValueArgumentKeptForLineage(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		// Node 2 has room for a rebuilt task blocked in Get of a lost
		// object and the rebuild of that object: a blocked task lends its
		// CPU, not its custom resources.
		0: {"head": 1}, 1: {"lin": 1}, 2: {"lin": 2},
	}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	single, w1 := linStep.Remote(linInput(), 1.0)
	// The chain's middle: its Ref is dropped at once, so only lineage
	// keeps what rebuilding the chain's end needs.
	end, w2 := func() (gray.Ref[[]float64], gray.Ref[string]) {
		mid, w := linStep.Remote(linInput(), 1.0)
		end, _ := linStep.Remote(mid, 2.0)
		return end, w
	}()
	// A by-value argument that is an actor's handle, and one that carries
	// a reference the program dropped (made on node 1 too).
	base, err := linBaseActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fromActor := linFromActor.Remote(base)
	unboxed := func() gray.Ref[[]float64] {
		inner, _ := linStep.Remote(linInput(), 1.0)
		return linUnbox.Remote(linBox{R: inner})
	}()
	for _, w := range []gray.Ref[string]{w1, w2} {
		where, err := gray.Get(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if where != c.Node(1).ID {
			t.Fatalf("a task ran on %q, want node 1 (%s), the only node with a \"lin\" resource", where, c.Node(1).ID)
		}
	}
	// The other results done too (they stay on node 1, unread).
	if ready, _, err := gray.Wait(ctx, []gray.Ref[[]float64]{end, fromActor, unboxed}, 3, time.Minute); err != nil || len(ready) != 3 {
		t.Fatalf("Wait for the results: %v, %v", ready, err)
	}
	runtime.GC() // the dropped Refs' cleanups tell the driver
	runtime.GC()

	c.AddNode()
	waitResources(t, 3)
	if locs := waitLocations(t, c, single.ID(), c.Node(1).ID); !slices.Contains(locs, c.Node(1).ID) {
		t.Fatalf("the location table lists the result on %q, want node 1 (%s)", locs, c.Node(1).ID)
	}
	before := gray.ClusterObjectStats()
	c.KillNode(1)
	// The dead node's entries leave the location table (the monitor
	// and the driver remove them).
	store := jobStore(t, c)
	clustertest.WaitFor(t, 10*time.Second, "the dead node's objects to leave the location table", func() bool {
		held, err := store.Held(ctx, c.Node(1).ID)
		return err == nil && len(held) == 0
	})
	if locs, err := store.Locations(ctx, single.ID()); err != nil || len(locs) != 0 {
		t.Fatalf("after node 1's death the location table lists the result on %q (%v), want nowhere", locs, err)
	}

	for _, tc := range []struct {
		name string
		ref  gray.Ref[[]float64]
		add  float64
	}{
		{"a task's result, its argument a value", single, 1},
		{"a chain's end, its start's argument a value", end, 3},
		{"a task's result, its argument an actor's handle", fromActor, 100},
		{"a task's result, its argument a value holding a dropped reference", unboxed, 2},
	} {
		x, err := gray.Get(ctx, tc.ref)
		if err != nil {
			t.Fatalf("%s, after its node died: %v", tc.name, err)
		}
		checkLin(t, tc.name, x, tc.add)
	}
	next, where := linStep.Remote(single, 10.0)
	x, err := gray.Get(ctx, next)
	if err != nil {
		t.Fatalf("a task reading the rebuilt result: %v", err)
	}
	checkLin(t, "a task reading the rebuilt result", x, 11)
	if w, err := gray.Get(ctx, where); err != nil || w != c.Node(2).ID {
		t.Fatalf("the task reading the rebuilt result ran on %q (%v), want node 2 (%s)", w, err, c.Node(2).ID)
	}
	if st := gray.ClusterObjectStats(); st.Rebuilt-before.Rebuilt < 6 {
		t.Fatalf("objects rebuilt after the death: %d, want at least 6 (every result and chain link made on node 1)", st.Rebuilt-before.Rebuilt)
	}
	runtime.KeepAlive(base)
}

// freeze stops process pid with SIGSTOP and waits until it is stopped
// (the signal is delivered asynchronously: a process may run on a moment).
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitFor(t, 10*time.Second, fmt.Sprintf("process %d to stop", pid), func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// pid (comm) state ...: the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
	})
}

// The driver's Get of a result on another node whose daemon (the server
// of its store) freezes and is then killed while the driver's pull waits
// on it: the pull fails, and the Get rebuilds the result on the node left
// instead of hanging or failing.
func TestClusterGetRebuildsWhenThePulledNodeDies(t *testing.T) {
	c, ctx := startTwoLinNodes(t)
	x, w := linStep.Remote(linInput(), 1.0)
	where, err := gray.Get(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	victim := 1
	if where == c.Node(2).ID {
		victim = 2
	}
	// Frozen, its server takes the pull's connection (the kernel does)
	// but never answers: the pull is in flight until the kill.
	freeze(t, c.NodePID(victim))
	type result struct {
		x   []float64
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := gray.Get(ctx, x)
		got <- result{v, err}
	}()
	c.WaitForRequestTo(victim, 30*time.Second) // the Get's pull waits on the frozen node
	before := gray.ClusterObjectStats()
	c.KillNode(victim)
	r := <-got
	if r.err != nil {
		t.Fatalf("Get of a result whose node died during the pull: %v", r.err)
	}
	checkLin(t, "the result pulled while its node died", r.x, 1)
	if st := gray.ClusterObjectStats(); st.Rebuilt <= before.Rebuilt {
		t.Fatalf("the result was not rebuilt: %+v", st)
	}
}

// linUse adds 1 to every element, on a "use" node.
var linUse = gray.Func1("test.cluster.linUse", func(ctx context.Context, x []float64) ([]float64, error) {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v + 1
	}
	return out, nil
}, gray.Resource("use", 1))

// A worker pulling its task's argument from a node that freezes and is then
// killed mid-pull: the task reports the failed pull, the argument (lost
// with its node) is rebuilt from lineage, and the task runs again, its
// result exact.
func TestClusterTaskRerunWhenItsArgumentsNodeDiesMidPull(t *testing.T) {
	c, x := argumentOnNode1(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.AddNode()
	waitResources(t, 3)
	freeze(t, c.NodePID(1))
	y := linUse.Remote(x) // on node 2, which pulls x from the frozen node 1
	waitSnapshot(t, "the task to reach its worker (which then pulls x)", func(s state.Snapshot) bool {
		return taskIn(s, y) == state.TaskRunning
	})
	c.KillNode(1)
	v, err := gray.Get(ctx, y)
	if err != nil {
		t.Fatalf("a task whose argument's node died mid-pull: %v", err)
	}
	checkLin(t, "the task re-run after its argument was rebuilt", v, 2)
	runtime.KeepAlive(x)
}

// An actor on a "lin" node whose method returns a 2 MiB array (it stays on
// the actor's node).
type linArr struct{}

var (
	linArrActor = gray.Actor0("test.cluster.linArr", func(ctx context.Context) (*linArr, error) { return &linArr{}, nil },
		gray.Resource("lin", 1))
	linArrGet = gray.Method1(linArrActor, "arr", func(a *linArr, ctx context.Context, k float64) ([]float64, error) {
		x := linInput()
		for i := range x {
			x[i] += k
		}
		return x, nil
	})
	linArrWhere = gray.Method0(linArrActor, "where", func(a *linArr, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
)

// An actor method's result whose only copy was on a node that died cannot
// be rebuilt (the method depends on the actor's state then): Get says so,
// with ErrObjectLost and the reason ErrLostActorMethod, while the actor
// itself comes back on the other node and answers new calls.
func TestClusterActorResultLostWithItsNode(t *testing.T) {
	c, ctx := startTwoLinNodes(t)
	h, err := linArrActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := linArrGet.Remote(h, 1.0)
	where, err := gray.Get(ctx, linArrWhere.Remote(h)) // after r, in order
	if err != nil {
		t.Fatal(err)
	}
	victim := 1
	if where == c.Node(2).ID {
		victim = 2
	}
	c.KillNode(victim)
	_, err = gray.Get(ctx, r)
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostActorMethod) {
		t.Fatalf("Get of an actor method's result lost with its node: %v; want ErrObjectLost and ErrLostActorMethod", err)
	}
	if !strings.Contains(err.Error(), "only copy") {
		t.Fatalf("the error does not say the only copy was on the dead node: %v", err)
	}
	x, err := gray.Get(ctx, linArrGet.Remote(h, 2.0))
	if err != nil {
		t.Fatalf("the actor after its node died: %v", err)
	}
	checkLin(t, "a new call of the recreated actor", x, 2)
}

// A task queued (waiting for a node that can run it) when the only node
// holding its argument dies: once a node for it joins, the argument is
// rebuilt first and the task runs on it, instead of its worker being sent
// an argument nobody holds any more.
func TestClusterQueuedTaskWaitsForItsLostArgument(t *testing.T) {
	c, x := argumentOnNode1(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	y := linUse.Remote(x) // waits: no node has "use" yet
	c.KillNode(1)
	clustertest.WaitFor(t, 10*time.Second, "the driver to count the argument lost", func() bool {
		return gray.ClusterObjectStats().Lost > 0
	})
	c.AddNode()
	v, err := gray.Get(ctx, y)
	if err != nil {
		t.Fatalf("a task queued while its argument's node died: %v", err)
	}
	checkLin(t, "the queued task, run after its argument was rebuilt", v, 2)
	runtime.KeepAlive(x)
}

// A task queued (waiting for a node that can run it) when the node holding
// its argument, a Put made there, dies: the Put cannot be rebuilt, and the
// task fails saying so (ErrObjectLost, ErrLostPut) instead of running
// without its argument.
func TestClusterQueuedTaskFailsWithItsLostPut(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"maker": 1}, 2: {"use": 1},
	}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := gray.Get(ctx, putOnNode.Remote())
	if err != nil {
		t.Fatal(err)
	}
	y := linUse.Remote(h.R) // waits: no node has "use" yet
	c.KillNode(1)
	clustertest.WaitFor(t, 10*time.Second, "the driver to count the Put lost", func() bool {
		return gray.ClusterObjectStats().Lost > 0
	})
	c.AddNode()
	_, err = gray.Get(ctx, y)
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostPut) {
		t.Fatalf("a task queued while its Put argument's node died: %v; want ErrObjectLost and ErrLostPut", err)
	}
}

// argumentOnNode1 starts a cluster whose node 1 alone can make linStep's
// results (node 2, which may also use them, joins when the test adds it)
// and returns the result of one linStep, made on node 1.
func argumentOnNode1(t *testing.T) (*clustertest.Cluster, gray.Ref[[]float64]) {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"lin": 1}, 2: {"lin": 1, "use": 1},
	}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x, w := linStep.Remote(linInput(), 1.0)
	if where, err := gray.Get(ctx, w); err != nil || where != c.Node(1).ID {
		t.Fatalf("the argument was made on %q (%v), want node 1 (%s)", where, err, c.Node(1).ID)
	}
	return c, x
}

// startTwoLinNodes starts a cluster of two 1-CPU nodes that both offer
// the "lin" resource, connects the test's driver to it, and returns it
// with a context that ends a minute later (or with the test).
func startTwoLinNodes(t *testing.T) (*clustertest.Cluster, context.Context) {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"lin": 1}, 2: {"lin": 1},
	}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c, ctx
}
