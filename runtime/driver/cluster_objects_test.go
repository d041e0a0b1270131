package driver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/transfer/limits"
)

// Objects that stay on the node that made them (runtime/node/remote_objects.go).

const bigLen = 8 << 20 // float64s: 64 MiB

var (
	// makeBig makes a 64 MiB array on a "maker" node.
	makeBig = gray.Func1("test.cluster.makeBig", func(ctx context.Context, seed float64) ([]float64, error) {
		x := make([]float64, bigLen)
		for i := range x {
			x[i] = seed + float64(i)
		}
		return x, nil
	}, gray.Resource("maker", 1))
	// checkBig, on a "user" node, checks the array and says where it ran.
	checkBig = gray.Func2("test.cluster.checkBig", func(ctx context.Context, x []float64, seed float64) (string, error) {
		if len(x) != bigLen || x[0] != seed || x[bigLen-1] != seed+bigLen-1 {
			return "", errors.New("checkBig: the array changed on its way")
		}
		return os.Getenv(cluster.EnvNodeID), nil
	}, gray.Resource("user", 1))
	// warmUser starts a worker on the "user" node, so that timing checkBig
	// does not time a worker's start.
	warmUser = gray.Func0("test.cluster.warmUser", func(ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	}, gray.Resource("user", 1))
)

// waitServed waits until node id's heartbeat reports at least min bytes
// served by its transfer server, and returns what it reports.
func waitServed(t *testing.T, c *clustertest.Cluster, id string, min int64) int64 {
	t.Helper()
	store := c.Dial("served")
	defer store.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		nodes, err := store.Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var served int64
		for _, n := range nodes {
			if n.ID == id {
				served = n.Load.ObjectsServed
			}
		}
		if served >= min || time.Now().After(deadline) {
			return served
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jobStore returns a control-store client of the running job of this
// process (the driver's).
func jobStore(t *testing.T, c *clustertest.Cluster) *control.Redis {
	t.Helper()
	jobs, err := c.Dial("locations").Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var job string
	for _, j := range jobs {
		if strings.HasSuffix(j.Driver, fmt.Sprintf(" pid %d", os.Getpid())) && j.Ended.IsZero() {
			job = j.ID
		}
	}
	if job == "" {
		t.Fatalf("no running job of this process among %+v", jobs)
	}
	return c.Dial(job)
}

// waitLocations waits until this driver's job lists node as a holder of
// object id in the cluster's location table, and returns the holders.
func waitLocations(t *testing.T, c *clustertest.Cluster, id gray.ObjectID, node string) []string {
	t.Helper()
	store := jobStore(t, c)
	var locs []string
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if locs, err = store.Locations(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(locs, node) {
			break
		}
	}
	return locs
}

// A 64 MiB array made on node 1 is read by a task on node 2: it goes from
// node 1's store to node 2's, never through the driver. The driver's Get
// then pulls it into its own store and maps it zero-copy.
func TestClusterObjectMovesNodeToNode(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"maker": 1}, 2: {"user": 1},
	}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()

	x := makeBig.Remote(3.0)
	if _, err := gray.Get(ctx, warmUser.Remote()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gray.Wait(ctx, []gray.Ref[[]float64]{x}, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	moveStart := time.Now()
	where, err := gray.Get(ctx, checkBig.Remote(x, 3.0))
	if err != nil {
		t.Fatal(err)
	}
	logLimits(t, "64 MiB node → node (a task on node 2 that takes it; with the task's round trip)", time.Since(moveStart))
	if where != c.Node(2).ID {
		t.Fatalf("checkBig ran on %q, want node 2 (%s)", where, c.Node(2).ID)
	}
	st := gray.ClusterObjectStats()
	if st.Served != 0 || st.Pulled != 0 {
		t.Fatalf("the array went through the driver (served %d, pulled %d bytes)", st.Served, st.Pulled)
	}
	if st.Remote < 1 {
		t.Fatalf("the driver knows of no object on another node: %+v", st)
	}
	if locs := waitLocations(t, c, x.ID(), c.Node(1).ID); !slices.Contains(locs, c.Node(1).ID) {
		t.Fatalf("the cluster's location table lists the array on %q, want node 1 (%s)", locs, c.Node(1).ID)
	}
	if served := waitServed(t, c, c.Node(1).ID, 64<<20); served < 64<<20 {
		t.Fatalf("node 1 served %d bytes, want the 64 MiB array", served)
	}

	// Back to the driver: pulled once, then zero-copy from its store.
	pullStart := time.Now()
	y, err := gray.Get(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	pulled := time.Since(pullStart)
	logLimits(t, "64 MiB node → driver through Get (fresh pages)", pulled)
	if len(y) != bigLen || y[0] != 3 || y[bigLen-1] != 3+bigLen-1 {
		t.Fatalf("the driver got %d elements, y[0]=%g", len(y), y[0])
	}
	y2, err := gray.Get(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	if &y[0] != &y2[0] {
		t.Fatal("two Gets of the array returned different memory: not zero-copy from the driver's store")
	}
	if st := gray.ClusterObjectStats(); st.Pulled < 64<<20 {
		t.Fatalf("the driver pulled %d bytes, want the 64 MiB array", st.Pulled)
	}
}

// bump adds one to every element of a 2 MiB array, on a "w" node, and
// says where it ran.
var bump = gray.Func1x2("test.cluster.bump", func(ctx context.Context, x []float64) ([]float64, string, error) {
	time.Sleep(10 * time.Millisecond)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v + 1
	}
	return out, os.Getenv(cluster.EnvNodeID), nil
}, gray.Resource("w", 1))

// kill -9 of a node holding the results of chains of tasks (and the
// intermediate results they were made from): Get of every chain's end is
// exact, the lost ones rebuilt from lineage, recursively, on the node
// left.
func TestClusterLostObjectsRebuiltAfterNodeDeath(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{
		1: {"w": 2}, 2: {"w": 2},
	}})
	initCluster(t, c)
	waitResources(t, 5)
	ctx := context.Background()
	const chains, steps = 6, 4
	start := make([]float64, 256<<10)
	sr, err := gray.Put(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]gray.Ref[[]float64], chains)
	wheres := make([]gray.Ref[string], chains)
	for i := range ends {
		var in any = sr
		for range steps {
			in, wheres[i] = bump.Remote(in)
		}
		ends[i] = in.(gray.Ref[[]float64])
	}
	where, err := gray.GetAll(ctx, wheres)
	if err != nil {
		t.Fatal(err)
	}
	victim := 1
	count := map[string]int{}
	for _, w := range where {
		count[w]++
	}
	if count[c.Node(2).ID] > count[c.Node(1).ID] {
		victim = 2
	}
	before := gray.ClusterObjectStats()
	killed := time.Now()
	c.KillNode(victim)
	got, err := gray.GetAll(ctx, ends)
	if err != nil {
		t.Fatal(err)
	}
	rebuiltIn := time.Since(killed)
	runtime.KeepAlive(sr)
	for i, v := range got {
		if len(v) != len(start) || v[0] != steps || v[len(v)-1] != steps {
			t.Fatalf("chain %d ended at %g, want %d", i, v[0], steps)
		}
	}
	st := gray.ClusterObjectStats()
	if st.Lost <= before.Lost || st.Rebuilt < count[c.Node(victim).ID] {
		t.Fatalf("after the node holding %d chain ends died: %+v; want them lost and rebuilt", count[c.Node(victim).ID], st)
	}
	t.Logf("kill -9 of the node holding %d of %d chain ends: %d objects lost, %d rebuilt, all ends back %v after the kill",
		count[c.Node(victim).ID], chains, st.Lost-before.Lost, st.Rebuilt-before.Rebuilt, rebuiltIn)
}

// putHolder carries a reference out of a task.
type putHolder struct{ R gray.Ref[[]float64] }

// putOnNode puts a 4 MiB array from a task on a "maker" node.
var putOnNode = gray.Func0("test.cluster.putOnNode", func(ctx context.Context) (putHolder, error) {
	r, err := gray.Put(ctx, make([]float64, 512<<10))
	return putHolder{R: r}, err
}, gray.Resource("maker", 1))

// A Put made by a task on a node lives only there: when that node dies it
// cannot be rebuilt, and Get says so (ErrObjectLost, ErrLostPut; its owner,
// the worker that put it, died with the node: ErrLostOwnerDied).
func TestClusterPutLostWithItsNode(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"maker": 1},
	}})
	initCluster(t, c)
	waitResources(t, 2)
	ctx := context.Background()
	h, err := gray.Get(ctx, putOnNode.Remote())
	if err != nil {
		t.Fatal(err)
	}
	c.KillNode(1)
	_, err = gray.Get(ctx, h.R)
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostPut) || !errors.Is(err, gray.ErrLostOwnerDied) {
		t.Fatalf("Get of a Put whose node died: %v; want ErrObjectLost, ErrLostPut and ErrLostOwnerDied (the worker that put it died with its node)", err)
	}
	if !strings.Contains(err.Error(), "only copy") {
		t.Fatalf("the error does not say the only copy was on the dead node: %v", err)
	}
}

// logLimits logs how long moving 64 MiB took beside the physical limits
// of such a move, measured right after (package limits): never asserted.
func logLimits(t *testing.T, what string, took time.Duration) {
	t.Helper()
	const n = 64 << 20
	c, err := limits.NewCopier(n, limits.ShmDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := make([]byte, n)
	if _, err := c.TCP(dst); err != nil { // touch dst's pages
		t.Fatal(err)
	}
	gbs := func(d time.Duration) float64 { return n / d.Seconds() / 1e9 }
	msg := fmt.Sprintf("%s: %v (%.2f GB/s); in the same run:", what, took.Round(time.Millisecond), gbs(took))
	for _, l := range []struct {
		name    string
		measure func() (time.Duration, error)
	}{
		{"raw TCP loopback into a reused buffer", func() (time.Duration, error) { return c.TCP(dst) }},
		{"raw TCP into a fresh /dev/shm file", c.TCPFreshShm},
		{"memcpy into a fresh /dev/shm file", c.MemcpyFreshShm},
	} {
		d, err := l.measure()
		if err != nil {
			t.Fatal(err)
		}
		msg += fmt.Sprintf("\n  %s: %v (%.2f GB/s; Gray at %.2f× its speed)", l.name, d.Round(time.Millisecond), gbs(d), d.Seconds()/took.Seconds())
	}
	t.Log(msg)
}
