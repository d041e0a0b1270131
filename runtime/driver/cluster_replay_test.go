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

// Spawner is an actor whose calls create a child actor (on their first
// call) and call it, and submit a task: replaying them after the
// spawner's node died must not create the child twice nor add to it twice.
type Spawner struct {
	child gray.Handle[Counter]
	made  bool
}

var (
	spawner = gray.Actor0("test.cluster.Spawner", func(ctx context.Context) (*Spawner, error) { return &Spawner{}, nil },
		gray.Resource("par", 1))
	// kid lives on a "kid" node.
	kid    = gray.Actor0("test.cluster.Kid", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil }, gray.Resource("kid", 1))
	kidAdd = gray.Method1(kid, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
	kidWhere = gray.Method0(kid, "where", func(c *Counter, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
	// twice is the task a spawner's call submits.
	twice = gray.Func1("test.cluster.twice", func(ctx context.Context, n int) (int, error) { return 2 * n, nil })
	// spawnAdd adds 2n to the child (creating it first if need be) and
	// returns the child's total.
	spawnAdd = gray.Method1(spawner, "add", func(s *Spawner, ctx context.Context, n int) (int, error) {
		if !s.made {
			h, err := kid.Remote(ctx)
			if err != nil {
				return 0, err
			}
			s.child, s.made = h, true
		}
		d, err := gray.Get(ctx, twice.Remote(n))
		if err != nil {
			return 0, err
		}
		return gray.Get(ctx, kidAdd.Remote(s.child, d))
	})
	spawnChild = gray.Method0(spawner, "child", func(s *Spawner, ctx context.Context) (gray.Handle[Counter], error) {
		return s.child, nil
	})
	spawnWhere = gray.Method0(spawner, "where", func(s *Spawner, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
)

// kill -9 of the node of an actor whose calls created a child actor and
// called it: the actor is recreated and its calls replayed, which keeps
// the child that still lives (the same handle, its state not added to
// again) or lets the child that died with it come back through its own
// replay, not a second creation.
func TestClusterReplayedActorKeepsItsChild(t *testing.T) {
	for _, c := range []struct {
		name string
		// nodes: the cluster's first nodes (the spawner lands on node 1,
		// its child on the node with "kid"); the node added before the
		// kill takes the recreated spawner (and child).
		nodes map[int]map[string]float64
		start int
	}{
		{"child on another node", map[int]map[string]float64{1: {"par": 1}, 2: {"kid": 1}, 3: {"par": 1}}, 2},
		{"child on the same node", map[int]map[string]float64{1: {"par": 1, "kid": 1}, 2: {"par": 1, "kid": 1}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := clustertest.Start(t, clustertest.Options{Nodes: c.start, CPUsPerNode: 1, NodeResources: c.nodes})
			initCluster(t, cl)
			waitResources(t, float64(c.start+1))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := spawner.Remote(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []int{2, 6} { // 2·1, then 2·1 + 2·2
				if got, err := gray.Get(ctx, spawnAdd.Remote(s, i+1)); err != nil || got != want {
					t.Fatalf("call %d: the child's total is %d (%v), want %d", i+1, got, err, want)
				}
			}
			child, err := gray.Get(ctx, spawnChild.Remote(s))
			if err != nil {
				t.Fatal(err)
			}
			if where, err := gray.Get(ctx, spawnWhere.Remote(s)); err != nil || where != cl.Node(1).ID {
				t.Fatalf("the spawner runs on %q (%v), want node 1 (%s)", where, err, cl.Node(1).ID)
			}
			kidNode, err := gray.Get(ctx, kidWhere.Remote(child))
			if err != nil {
				t.Fatal(err)
			}
			cl.AddNode()
			waitResources(t, float64(c.start+2))
			cl.KillNode(1)
			if got, err := gray.Get(ctx, spawnAdd.Remote(s, 10)); err != nil || got != 26 {
				t.Fatalf("after the spawner's node died it answers %d (%v), want 2+4+20 = 26 (the child kept, its calls not made twice)", got, err)
			}
			again, err := gray.Get(ctx, spawnChild.Remote(s))
			if err != nil || again.ID() != child.ID() {
				t.Fatalf("the recreated spawner's child is %v (%v), want the same handle %v", again.ID(), err, child.ID())
			}
			if got, err := gray.Get(ctx, kidAdd.Remote(child, 0)); err != nil || got != 26 {
				t.Fatalf("the child's total, asked directly: %d (%v), want 26", got, err)
			}
			now, err := gray.Get(ctx, kidWhere.Remote(child))
			if err != nil {
				t.Fatal(err)
			}
			if moved := now != kidNode; moved != (kidNode == cl.Node(1).ID) {
				t.Fatalf("the child ran on %s and runs on %s now; only a child on the dead node 1 (%s) should move", kidNode, now, cl.Node(1).ID)
			}
		})
	}
}
