package driver_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
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

// A caller on another node than its callee's: an actor on node 1 calling
// an actor on the driver's machine (the head's node, with the "near"
// resource). Both end with their processes: on a cluster an actor is
// restarted on another node by default, and so is called through the
// driver, which keeps its replay log.
var (
	dNearLogType    = gray.Actor0("test.direct.NearLog", newDLog, gray.Resource("near", 1), gray.NoRestarts())
	dNearLogAdd     = gray.Method1(dNearLogType, "add", dLogAddFn)
	dNearLogBlock   = gray.Method1(dNearLogType, "block", dLogBlockFn)
	dNearLogWhere   = gray.Method0(dNearLogType, "where", func(*dLog, context.Context) (string, error) { return os.Getenv(cluster.EnvNodeID), nil })
	dFarCallerType  = gray.Actor0("test.direct.FarCaller", func(context.Context) (*dCaller, error) { return &dCaller{}, nil }, gray.Resource("far", 1), gray.NoRestarts())
	dFarCallerStart = gray.Method2(dFarCallerType, "start", startCalls(dNearLogAdd, dNearLogBlock))
	dFarCallerWhere = gray.Method0(dFarCallerType, "where", func(*dCaller, context.Context) (string, error) { return os.Getenv(cluster.EnvNodeID), nil })
	dFarCallerDone  = gray.Method0(dFarCallerType, "finish", finishCalls)
)

// On a cluster, an actor on another node calls an actor on the driver's
// machine directly (TCP at the host the driver's workers are dialled by),
// not through the driver: while the callee runs the call, the driver
// counts none pending.
func TestClusterDirectCallFromAnotherNode(t *testing.T) {
	t.Setenv(task.EnvDirect, "1")
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{0: {"near": 1}, 1: {"far": 1}}})
	initCluster(t, c)
	waitResources(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := newActor(t, ctx, dNearLogType)
	if where, err := gray.Get(ctx, dNearLogWhere.Remote(log)); err != nil || where != c.Node(0).ID {
		t.Fatalf("the callee runs on %q (%v), want the head's node, the driver's (%s)", where, err, c.Node(0).ID)
	}
	caller, g, _, _ := blockedCallerOf(t, ctx, dFarCallerType, dFarCallerStart, log)
	if where, err := gray.Get(ctx, dFarCallerWhere.Remote(caller)); err != nil || where != c.Node(1).ID {
		t.Fatalf("the caller runs on %q (%v), want node 1 (%s)", where, err, c.Node(1).ID)
	}
	bypassed(t, ctx, log, g, dFarCallerDone, caller, "from node 1")
}

// A log whose constructor waits for a gate (after writing its process ID
// to gate+".started"), and a caller's method that calls its add n times
// without waiting, keeping the references.
var (
	dSlowLogType = gray.Actor1("test.direct.SlowLog", func(ctx context.Context, g string) (*dLog, error) {
		if _, err := dLogBlockFn(nil, ctx, g); err != nil {
			return nil, err
		}
		return &dLog{}, nil
	})
	dSlowLogAdd     = gray.Method1(dSlowLogType, "add", dLogAddFn)
	dCallerFireSlow = gray.Method2(dCallerType, "fireSlow", func(c *dCaller, ctx context.Context, h gray.Handle[dLog], n int) (int, error) {
		for i := range n {
			c.refs = append(c.refs, dSlowLogAdd.Remote(h, i))
		}
		return os.Getpid(), nil
	})
)

// A caller given a released actor's address that had not connected when
// the release came: its calls, made before the release, run (the drain
// waits for it to dial), or, when it dies before it connects, the drain
// ends without it. The window is reached by stopping the caller's process
// (SIGSTOP) between its question for the address (seen in the state API:
// DirectAsking) and the answer: the callee's constructor holds the
// answer back until the caller is stopped.
// On session 14's code the worker drained at once: its process exited,
// the caller's dial failed, and its calls, sent through the driver, failed
// as calls to a released actor.
func TestDirectCallerConnectingAfterReleaseIsDrained(t *testing.T) {
	for _, c := range []struct {
		name string
		dies bool // the caller is killed instead of going on
	}{
		{"it connects after the release: its calls run", false},
		{"it dies before it connects: the drain ends", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := startDirect(t)
			g := newGate(t, "ctor")
			log, err := dSlowLogType.Remote(ctx, string(g))
			if err != nil {
				t.Fatal(err)
			}
			calleePID := waitStarted(t, g)
			caller := newActor(t, ctx, dCallerType)
			const n = 20
			callerPID, err := gray.Get(ctx, dCallerFireSlow.Remote(caller, log, n))
			if err != nil {
				t.Fatal(err)
			}
			waitSnapshot(t, "the caller to ask for the address", func(s state.Snapshot) bool {
				return actorState(t, s, log).DirectAsking == 1
			})
			if err := syscall.Kill(callerPID, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(callerPID, syscall.SIGCONT) })
			g.open(t) // constructed: the driver answers the stopped caller
			waitSnapshot(t, "the caller to be given the address", func(s state.Snapshot) bool {
				return actorState(t, s, log).DirectCallers == 1
			})
			theDriver(t).Node.Release(log.ID())
			if c.dies {
				if err := syscall.Kill(callerPID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := syscall.Kill(callerPID, syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				res, err := gray.Get(ctx, dCallerFinish.Remote(caller))
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != n {
					t.Fatalf("%d results, want %d", len(res), n)
				}
				for i, r := range res {
					if r != "ok" {
						t.Fatalf("call %d of %d, made before the release by a caller given the address: %q; want its result", i+1, n, r)
					}
				}
			}
			clustertest.WaitFor(t, 30*time.Second, "the released actor's process to exit", func() bool {
				return errors.Is(syscall.Kill(calleePID, 0), syscall.ESRCH)
			})
		})
	}
}
