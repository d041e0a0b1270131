package driver_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/cluster"
)

// An actor on a "use" node that adds 1 to the arrays it is given, and
// counts its calls (the order and number of calls must survive a lost
// argument).
type linUser struct{ calls int }

var (
	linUserActor = gray.Actor0("test.cluster.linUser", func(ctx context.Context) (*linUser, error) { return &linUser{}, nil },
		gray.Resource("use", 1))
	linUserAdd = gray.Method1(linUserActor, "add", func(u *linUser, ctx context.Context, x []float64) ([]float64, error) {
		u.calls++
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = v + 1
		}
		return out, nil
	})
	linUserCalls = gray.Method0(linUserActor, "calls", func(u *linUser, ctx context.Context) (int, error) { return u.calls, nil })
	linUserWhere = gray.Method0(linUserActor, "where", func(u *linUser, ctx context.Context) (string, error) {
		return os.Getenv(cluster.EnvNodeID), nil
	})
)

// An actor call already sent to its actor when the only node holding its
// argument freezes and is then killed mid-pull: the call waits for the
// argument, rebuilt from lineage on the node left, instead of failing, and
// the actor's later calls run after it, in order.
func TestClusterActorCallWaitsForItsLostArgument(t *testing.T) {
	c, x := argumentOnNode1(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n2 := c.AddNode()
	waitResources(t, 3)
	h, err := linUserActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if where, err := gray.Get(ctx, linUserWhere.Remote(h)); err != nil || where != n2.ID {
		t.Fatalf("the actor runs on %q (%v), want node 2 (%s)", where, err, n2.ID)
	}
	freeze(t, c.NodePID(1))
	y := linUserAdd.Remote(h, x) // the actor pulls x from the frozen node 1
	calls := linUserCalls.Remote(h)
	c.WaitForRequestTo(1, 30*time.Second) // the actor's pull waits on node 1
	c.KillNode(1)
	v, err := gray.Get(ctx, y)
	if err != nil {
		t.Fatalf("an actor call whose argument's node died mid-pull: %v", err)
	}
	checkLin(t, "the actor call, run once its argument was rebuilt", v, 2)
	if n, err := gray.Get(ctx, calls); err != nil || n != 1 {
		t.Fatalf("the next call counted %d calls (%v), want 1: the call ran once, before it", n, err)
	}
	runtime.KeepAlive(x)
}
