package driver_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

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

// Parent, of a NoRestarts type, creates a Counter child actor holding a
// CPU; a process that dies takes its actor and that child with it.
type Parent struct{ child gray.Handle[Counter] }

var (
	childCounter = gray.Actor0("test.ChildCounter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil }, gray.CPUs(1))
	childAdd     = gray.Method1(childCounter, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
	parentType = gray.Actor0("test.Parent", func(ctx context.Context) (*Parent, error) {
		h, err := childCounter.Remote(ctx)
		return &Parent{child: h}, err
	}, gray.NoRestarts())
	parentChild = gray.Method0(parentType, "child", func(p *Parent, ctx context.Context) (gray.Handle[Counter], error) { return p.child, nil })
	parentExit  = gray.Method0(parentType, "exit", func(p *Parent, ctx context.Context) (int, error) {
		os.Exit(3)
		return 0, nil
	})
)

// An actor of a NoRestarts type that dies ends the actors it created, so
// their resources come back (no one else could end them: only Kill ends
// actors made inside a worker).
func TestNoRestartsActorEndsItsChildren(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	p, err := parentType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	child, err := gray.Get(ctx, parentChild.Remote(p))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, childAdd.Remote(child, 2)); err != nil || v != 2 {
		t.Fatalf("child add: %d %v", v, err)
	}
	if _, err := gray.Get(ctx, parentExit.Remote(p)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("the parent's exit: %v, want ErrActorDead", err)
	}
	if v, err := gray.Get(ctx, childAdd.Remote(child, 1)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("the child answered %d (%v) after its NoRestarts parent died, want ErrActorDead", v, err)
	}
	clustertest.WaitFor(t, 10*time.Second, "the child's CPU to be free", func() bool {
		return gray.AvailableResources()["CPU"] == 2
	})
}

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
