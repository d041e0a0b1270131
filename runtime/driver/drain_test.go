package driver_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
)

// Release's drain (runtime/direct, drain.go; runtime/worker,
// direct_drain.go).

// dCallerFire calls block(g) of a log, then add(0) … add(n-1), keeping
// the references, and returns its own process ID.
var dCallerFire = gray.Method3(dCallerType, "fire", func(c *dCaller, ctx context.Context, h gray.Handle[dLog], g string, n int) (int, error) {
	c.refs = append(c.refs, dLogBlock.Remote(h, g))
	for i := range n {
		c.refs = append(c.refs, dLogAdd.Remote(h, i))
	}
	return 0, nil
})

// An actor released while another actor's direct calls to it are queued
// at its worker (one runs, blocked on a gate, the others wait behind it)
// ends only once they ran: every one returns its result, as calls the
// driver had sent before the release do. Then its process exits, and a
// call made after the release fails with ErrActorDead. The release is
// the driver's (node.Release, what a collected handle does): a handle
// given to a task or actor never releases its actor by collection today
// (gray.Handle), so this is the backend's path, not a program's.
func TestDirectCallsDrainOnRelease(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	c := newActor(t, ctx, dCallerType)
	g := newGate(t, "block")
	const n = 100
	if _, err := gray.Get(ctx, dCallerFire.Remote(c, log, string(g), n)); err != nil {
		t.Fatal(err)
	}
	calleePID := waitStarted(t, g)
	theDriver(t).Node.Release(log.ID())
	g.open(t)
	res, err := gray.Get(ctx, dCallerFinish.Remote(c))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n+1 {
		t.Fatalf("%d results, want %d", len(res), n+1)
	}
	for i, r := range res {
		if r != "ok" {
			t.Fatalf("call %d of %d, made before the release: %q; want its result (the released actor ends once its calls ran)", i+1, n+1, r)
		}
	}
	clustertest.WaitFor(t, 30*time.Second, "the released actor's process to exit", func() bool {
		return errors.Is(syscall.Kill(calleePID, 0), syscall.ESRCH)
	})
	if _, err := gray.Get(ctx, dCallerRun.Remote(c, log, 0, 3)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("calls made after the release: %v, want ErrActorDead", err)
	}
}
