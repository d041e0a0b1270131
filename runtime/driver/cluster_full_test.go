package driver_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
)

// fullWorker is an actor that holds one CPU, as an RL rollout worker does;
// it is restarted whenever its node dies.
type fullWorker struct{}

var (
	fullWorkerType = gray.Actor0("test.full.Worker", func(ctx context.Context) (*fullWorker, error) {
		return &fullWorker{}, nil
	}, gray.CPUs(1), gray.MaxRestarts(-1))
	fullWhere = gray.Method0(fullWorkerType, "where", func(w *fullWorker, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
)

// A cluster with every CPU held by actors loses a node (issue 27, defect
// 1: a run using every CPU hung in silence). The actors it held restart;
// those the live nodes cannot hold wait, the driver says for what (and
// `gray status` lists it), and once a replacement node joins they start
// there and answer: no actor waits on a full node while another has room.
func TestClusterFullActorsMoveToReplacement(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2,
		NodeTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
	clustertest.WaitFor(t, 30*time.Second, "the driver to lease the 3 nodes", func() bool { return gray.ClusterResources()["CPU"] >= 6 })
	drv := theDriver(t)

	const n = 6 // every CPU of the cluster
	hs := make([]gray.Handle[fullWorker], n)
	where := map[string]int{}
	for i := range hs {
		h, err := fullWorkerType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	for _, h := range hs {
		w, err := gray.Get(ctx, fullWhere.Remote(h))
		if err != nil {
			t.Fatal(err)
		}
		where[w]++
	}
	victim := c.Node(1)
	if where[victim.ID] == 0 {
		victim = c.Node(2)
	}
	lost := where[victim.ID]
	if lost == 0 {
		t.Fatalf("no actor on a non-head node: %v", where)
	}
	c.KillNode(victim.Index)

	// The live nodes' CPUs are all held: the lost actors wait, and the
	// driver knows what for.
	clustertest.WaitFor(t, 30*time.Second, "the driver to see its actors wait for CPUs", func() bool {
		st, ok := drv.Stalled()
		return ok && st.Actors == lost && st.Need.CPU == float64(lost) && st.Alive.CPU == n-2 && st.Had.CPU == n
	})
	st, _ := drv.Stalled()
	t.Logf("the driver says: %s", st)
	c.WaitStatus(30*time.Second, "gray status to list what the job waits for", func(s clustertest.Status) bool {
		for _, w := range s.Waiting {
			if w.CPU == float64(lost) {
				return true
			}
		}
		return false
	})

	repl := c.AddNode()
	joined := time.Now()
	for i, h := range hs {
		w, err := gray.Get(ctx, fullWhere.Remote(h))
		if err != nil {
			t.Fatalf("actor %d after the replacement joined: %v", i, err)
		}
		if w == victim.ID {
			t.Fatalf("actor %d answers from the dead node %s", i, w)
		}
	}
	t.Logf("every actor answered %v after the replacement node %s joined", time.Since(joined).Round(time.Millisecond), repl.ID)
	if _, ok := drv.Stalled(); ok {
		t.Fatal("the driver still reports actors waiting once every actor answered")
	}
}
