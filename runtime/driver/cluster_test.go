package driver_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
)

// Tasks and actors of the cluster tests: each reports the node that ran it
// (a cluster node's ID; the driver's node sets it for its own workers too).
var (
	whereSlow = gray.Func1("test.cluster.whereSlow", func(ctx context.Context, ms int) (string, error) {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return os.Getenv(cluster.EnvNodeID), nil
	})
	// scale doubles every element: a 64 MiB array goes to another node and
	// comes back.
	scale = gray.Func1("test.cluster.scale", func(ctx context.Context, x []float64) ([]float64, error) {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = 2 * v
		}
		return out, nil
	}, gray.Resource("far", 1))
	farCounter = gray.Actor0("test.cluster.Counter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil },
		gray.Resource("far", 1))
	farAdd = gray.Method1(farCounter, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
	farWhere = gray.Method0(farCounter, "where", func(c *Counter, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
	// addFrom calls the actor from a task, and says where it ran.
	addFrom = gray.Func2("test.cluster.addFrom", func(ctx context.Context, h gray.Handle[Counter], n int) (string, error) {
		if _, err := gray.Get(ctx, farAdd.Remote(h, n)); err != nil {
			return "", err
		}
		return os.Getenv(cluster.EnvNodeID), nil
	}, gray.Resource("near", 1))
)

// initCluster starts gray as a driver of c and shuts it down when the test
// ends.
func initCluster(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token(), ObjectStoreMemory: 512 << 20}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
}

// waitResources waits until the driver's scheduler counts want CPUs in
// the cluster (the nodes' leases are taken in the background).
func waitResources(t *testing.T, cpus float64) {
	t.Helper()
	clustertest.WaitFor(t, 30*time.Second, fmt.Sprintf("the cluster to have %g CPUs", cpus), func() bool {
		return gray.ClusterResources()["CPU"] >= cpus
	})
}

// On a 3-node cluster, tasks land on all three nodes: the head's (run by
// the driver's own node, on the head's machine) and the two others (leased).
func TestClusterTasksLandOnEveryNode(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()
	var refs []gray.Ref[string]
	for range 12 {
		refs = append(refs, whereSlow.Remote(200))
	}
	got, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for i := range c.Size() {
		if id := c.Node(i).ID; seen[id] == 0 {
			t.Errorf("no task ran on node %d (%s): %v", i, id, seen)
		}
	}
}

// A 64 MiB array goes to a task on another node and its result comes back
// into the driver's shared memory: Get returns it zero-copy (twice, the
// same memory). An actor on one node is called from tasks on another.
func TestClusterObjectsAndActorsAcrossNodes(t *testing.T) {
	// Node 1 is "far" (the actor and scale run there), node 2 is "near"
	// (the tasks that call the actor run there).
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"far": 2}, 2: {"near": 5},
	}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()

	x := make([]float64, 8<<20) // 64 MiB
	for i := range x {
		x[i] = float64(i)
	}
	xr, err := gray.Put(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	ref := scale.Remote(xr)
	y, err := gray.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(y) != len(x) || y[12345] != 2*12345 || y[len(y)-1] != 2*float64(len(x)-1) {
		t.Fatalf("scale returned %d elements, y[12345]=%g", len(y), y[12345])
	}
	y2, err := gray.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if &y[0] != &y2[0] {
		t.Fatal("two Gets of the result returned different memory: not zero-copy from the driver's store")
	}

	h, err := farCounter.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	where, err := gray.Get(ctx, farWhere.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	if where != c.Node(1).ID {
		t.Fatalf("the actor runs on %q, want node 1 (%s)", where, c.Node(1).ID)
	}
	var refs []gray.Ref[string]
	for i := range 5 {
		refs = append(refs, addFrom.Remote(h, i+1))
	}
	got, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		if w != c.Node(2).ID {
			t.Fatalf("a caller ran on %q, want node 2 (%s)", w, c.Node(2).ID)
		}
	}
	if total, err := gray.Get(ctx, farAdd.Remote(h, 0)); err != nil || total != 15 {
		t.Fatalf("the actor holds %d (%v), want 1+2+3+4+5 = 15", total, err)
	}
}

// slowInc adds one after a while, on a node with a "w" resource.
var slowInc = gray.Func1("test.cluster.slowInc", func(ctx context.Context, x int) (int, error) {
	time.Sleep(40 * time.Millisecond)
	return x + 1, nil
}, gray.Resource("w", 1))

// kill -9 of a node in the middle of chains of tasks: the tasks it ran run
// again on the other node, and every chain ends with the exact result.
func TestClusterNodeKilledDuringChains(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{
		1: {"w": 2}, 2: {"w": 2},
	}})
	initCluster(t, c)
	waitResources(t, 6)
	ctx := context.Background()
	const chains, steps = 4, 12
	ends := make([]gray.Ref[int], chains)
	for i := range ends {
		r := slowInc.Remote(0)
		for range steps - 1 {
			r = slowInc.Remote(r)
		}
		ends[i] = r
	}
	// Kill node 1 once its workers run links of the chains.
	d := theDriver(t)
	clustertest.WaitFor(t, 30*time.Second, "tasks to run on node 1", func() bool {
		for _, a := range d.Accounts(d.Self()) {
			if a.Name == c.Node(1).ID && a.Tasks > 0 {
				return true
			}
		}
		return false
	})
	c.KillNode(1)
	got, err := gray.GetAll(ctx, ends)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != steps {
			t.Errorf("chain %d ended at %d, want %d", i, v, steps)
		}
	}
}

// A driver with a wrong token is refused, with an error that says so.
func TestClusterWrongTokenIsRefused(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: strings.Repeat("0", 64)})
	if err == nil {
		gray.Shutdown()
		t.Fatal("Init with a wrong token succeeded")
	}
	if !strings.Contains(err.Error(), "password") && !strings.Contains(err.Error(), "token") {
		t.Fatalf("Init with a wrong token: %v; want an error naming the token or password", err)
	}
}

var lateWhere = gray.Func0("test.cluster.lateWhere", func(ctx context.Context) (string, error) {
	return os.Getenv(cluster.EnvNodeID), nil
}, gray.Resource("late", 1))

// A task that only a node not yet joined can hold waits for it, then runs
// there.
func TestClusterTaskWaitsForNodeToJoin(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{NodeResources: map[int]map[string]float64{1: {"late": 1}}})
	initCluster(t, c)
	ref := lateWhere.Remote()
	ctx := context.Background()
	if ready, _, err := gray.Wait(ctx, []gray.Ref[string]{ref}, 1, 300*time.Millisecond); err != nil || len(ready) != 0 {
		t.Fatalf("the task finished (%v, %v) before any node could hold it", ready, err)
	}
	// gray status says what waits, in JSON and in words.
	c.WaitStatus(20*time.Second, "the waiting request in gray status", func(st clustertest.Status) bool {
		return len(st.Waiting) == 1 && st.Waiting[0].Custom["late"] == 1
	})
	if out, err := c.Gray("status"); err != nil || !strings.Contains(out, "Waiting for a node that can hold it") || !strings.Contains(out, "late=1") {
		t.Errorf("gray status does not show the waiting request (%v):\n%s", err, out)
	}
	n := c.AddNode()
	got, err := gray.Get(ctx, ref)
	if err != nil || got != n.ID {
		t.Fatalf("the task ran on %q (%v), want the node that joined (%s)", got, err, n.ID)
	}
	c.WaitStatus(20*time.Second, "no request waiting once the node joined", func(st clustertest.Status) bool {
		return len(st.Waiting) == 0
	})
}

// kill -9 of an actor's node: the actor is recreated on the other node
// with its calls replayed in order, so its state carries on.
func TestClusterActorRecreatedAfterNodeDeath(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"far": 1}, 2: {"far": 1},
	}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()
	h, err := farCounter.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := gray.Get(ctx, farAdd.Remote(h, i)); err != nil {
			t.Fatal(err)
		}
	}
	where, err := gray.Get(ctx, farWhere.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	victim := 1
	if where == c.Node(2).ID {
		victim = 2
	}
	c.KillNode(victim)
	total, err := gray.Get(ctx, farAdd.Remote(h, 100))
	if err != nil || total != 115 {
		t.Fatalf("after its node died the actor answers %d (%v), want 1+2+3+4+5+100 = 115", total, err)
	}
	if now, err := gray.Get(ctx, farWhere.Remote(h)); err != nil || now == where {
		t.Fatalf("the actor runs on %q (%v), want a node other than the dead %s", now, err, where)
	}
}

// onceCounter allows a single restart: one node death must cost exactly one.
var (
	onceCounter = gray.Actor0("test.cluster.OnceCounter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil },
		gray.Resource("far", 1), gray.MaxRestarts(1))
	onceAdd = gray.Method1(onceCounter, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
	onceWhere = gray.Method0(onceCounter, "where", func(c *Counter, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID) + " " + strconv.Itoa(os.Getpid()), nil
	})
)

// One node death counts once against an actor's restart limit, even when
// the driver hears of it twice: first its worker's connection drops (the
// actor is restarted on the same node, whose daemon is frozen and never
// starts the new worker), then the monitor declares the node dead (the
// actor is placed on another node). With MaxRestarts(1) the actor must
// survive with its state.
func TestClusterNodeDeathCountsOnceAgainstRestarts(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeTimeout: time.Second,
		NodeResources: map[int]map[string]float64{1: {"far": 1}, 2: {"far": 1}}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()
	h, err := onceCounter.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, onceAdd.Remote(h, 5)); err != nil {
		t.Fatal(err)
	}
	where, err := gray.Get(ctx, onceWhere.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	id, pidText, _ := strings.Cut(where, " ")
	victim := 1
	if id == c.Node(2).ID {
		victim = 2
	}
	daemon := c.NodePID(victim)
	if err := syscall.Kill(daemon, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.KillNode(victim) })
	worker, _ := strconv.Atoi(pidText)
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the actor's worker (pid %d): %v", worker, err)
	}
	total, err := gray.Get(ctx, onceAdd.Remote(h, 10))
	if err != nil || total != 15 {
		t.Fatalf("after its worker and then its node died the actor answers %d (%v), want 5+10 = 15", total, err)
	}
	if now, err := gray.Get(ctx, onceWhere.Remote(h)); err != nil || strings.HasPrefix(now, id) {
		t.Fatalf("the actor runs on %q (%v), want a node other than the frozen %s", now, err, id)
	}
}

// newActorAnswers creates a farCounter and calls it once.
func newActorAnswers(ctx context.Context) error {
	h, err := farCounter.Remote(ctx)
	if err != nil {
		return err
	}
	v, err := gray.Get(ctx, farAdd.Remote(h, 7))
	if err == nil && v != 7 {
		err = fmt.Errorf("a new actor answered %d, want 7", v)
	}
	return err
}

// Redis killed with kill -9 and restarted by the head: new actors can be
// created (on another node) and answer, during the outage and after it,
// and the nodes stay in the job. The times are logged for
// benchmarks/results/cluster.md, not asserted.
func TestClusterNewActorsAfterRedisRestart(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1,
		NodeResources: map[int]map[string]float64{1: {"far": 4}}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := newActorAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	old := c.KillRedis()
	if err := newActorAnswers(ctx); err != nil {
		t.Fatalf("creating an actor while Redis is down: %v", err)
	}
	during := time.Since(killed)
	c.WaitRedis(old)
	answering := time.Since(killed)
	if err := newActorAnswers(ctx); err != nil {
		t.Fatalf("creating an actor after Redis restarted: %v", err)
	}
	after := time.Since(killed)
	c.WaitStatus(20*time.Second, "both nodes alive after the restart", func(st clustertest.Status) bool { return st.Alive == 2 && st.Dead == 0 })
	if got := gray.ClusterResources()["far"]; got != 4 {
		t.Errorf("after the restart the driver holds far=%g, want the node's 4", got)
	}
	t.Logf("redis-server kill -9: a new actor answered %v later (Redis down); Redis answered again after %v; a new actor then answered at %v",
		during.Round(time.Millisecond), answering.Round(time.Millisecond), after.Round(time.Millisecond))
}

// gray status --json shows, per node, what the job's live tasks and
// actors hold there, as the driver publishes it, and what the node leased.
func TestClusterStatusShowsLiveWork(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1,
		NodeResources: map[int]map[string]float64{1: {"far": 2}}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx := context.Background()
	h, err := farCounter.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, farAdd.Remote(h, 1)); err != nil {
		t.Fatal(err)
	}
	refs := []gray.Ref[string]{whereSlow.Remote(3000), whereSlow.Remote(3000)}
	far := c.Node(1).ID
	st := c.WaitStatus(20*time.Second, "the actor and 2 running tasks in gray status", func(st clustertest.Status) bool {
		n, _ := st.Node(far)
		return st.Tasks == 2 && st.Actors == 1 && n.Actors == 1 && n.Used.Custom["far"] == 1 && st.Used.CPU == 2
	})
	// The lease holds at least what the work there uses (the spare far
	// unit may have gone back, idle: grants follow demand).
	if n, _ := st.Node(far); n.Leased.CPU != 1 || n.Leased.Custom["far"] < 1 || n.Leased.Custom["far"] > 2 {
		t.Errorf("node 1 reports %v leased, want its CPU and the actor's far unit (of 2) leased to the driver", n.Leased)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Load == nil || len(st.Jobs[0].Load.Nodes) != 2 {
		t.Errorf("the job's published load: %+v", st.Jobs)
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	c.WaitStatus(20*time.Second, "no task left in gray status", func(st clustertest.Status) bool {
		return st.Tasks == 0 && st.Actors == 1 && st.Used.CPU == 0
	})
}
