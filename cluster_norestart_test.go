package gray_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
)

// An actor type with NoRestarts is not recreated when its node dies: its
// calls fail with ErrActorDead, for the program to replace it (as tune
// restarts trials from their own checkpoints).
var (
	fragile = gray.Actor0("test.cluster.Fragile", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil },
		gray.Resource("far", 1), gray.NoRestarts())
	fragileWhere = gray.Method0(fragile, "where", func(c *Counter, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
)

func TestClusterNoRestartsActorDiesWithItsNode(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 1, NodeResources: map[int]map[string]float64{
		1: {"far": 1}, 2: {"far": 1},
	}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx := context.Background()
	h, err := fragile.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	where, err := gray.Get(ctx, fragileWhere.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	victim := 1
	if where == c.Node(2).ID {
		victim = 2
	}
	c.KillNode(victim)
	if now, err := gray.Get(ctx, fragileWhere.Remote(h)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("after its node died the actor answered %q (%v), want ErrActorDead", now, err)
	}
}

// NoRestarts contradicts MaxRestarts and CheckpointInterval, and is no
// option of a remote function.
func TestNoRestartsConflicts(t *testing.T) {
	for _, c := range []struct {
		name     string
		register func()
		want     string
	}{
		{"with MaxRestarts", func() {
			gray.Actor0("test.NoRestartsMax", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil }, gray.NoRestarts(), gray.MaxRestarts(2))
		}, "NoRestarts contradicts MaxRestarts"},
		{"on a function", func() {
			gray.Func0("test.NoRestartsFunc", func(ctx context.Context) (int, error) { return 0, nil }, gray.NoRestarts())
		}, "options of actor types"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), c.want) {
					t.Errorf("panic %v, want one saying %q", p, c.want)
				}
			}()
			c.register()
		})
	}
}
