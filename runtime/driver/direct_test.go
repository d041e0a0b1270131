package driver_test

import (
	"context"
	"errors"
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
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// Actors calling actors directly (task.EnvDirect; runtime/worker/direct.go).

// dLog records the numbers it is given, in the order its calls ran.
type dLog struct{ got []int }

// dCaller is an actor that calls a dLog and keeps the references.
type dCaller struct{ refs []gray.Ref[int] }

func newDLog(context.Context) (*dLog, error) { return &dLog{}, nil }

func dLogAddFn(l *dLog, _ context.Context, x int) (int, error) {
	l.got = append(l.got, x)
	return len(l.got), nil
}

// dLogBlockFn writes its process ID to gate+".started", then waits for the
// gate; it returns its process ID.
func dLogBlockFn(_ *dLog, ctx context.Context, g string) (int, error) {
	if err := os.WriteFile(g+".started", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return 0, err
	}
	if err := gate(g).wait(ctx); err != nil {
		return 0, err
	}
	return os.Getpid(), nil
}

var (
	dLogType  = gray.Actor0("test.direct.Log", newDLog)
	dLogAdd   = gray.Method1(dLogType, "add", dLogAddFn)
	dLogBlock = gray.Method1(dLogType, "block", dLogBlockFn)
	dLogList  = gray.Method0(dLogType, "list", func(l *dLog, _ context.Context) ([]int, error) { return l.got, nil })

	// A log on a node with the "far" resource, ended with its process.
	dFarLogType  = gray.Actor0("test.direct.FarLog", newDLog, gray.Resource("far", 1), gray.NoRestarts())
	dFarLogAdd   = gray.Method1(dFarLogType, "add", dLogAddFn)
	dFarLogBlock = gray.Method1(dFarLogType, "block", dLogBlockFn)
	dFarLogWhere = gray.Method0(dFarLogType, "where", func(*dLog, context.Context) (string, error) { return os.Getenv(cluster.EnvNodeID), nil })

	// A log restarted once when its process dies: called through the driver.
	dRLogType  = gray.Actor0("test.direct.RLog", newDLog, gray.MaxRestarts(1))
	dRLogAdd   = gray.Method1(dRLogType, "add", dLogAddFn)
	dRLogBlock = gray.Method1(dRLogType, "block", dLogBlockFn)

	dCallerType = gray.Actor0("test.direct.Caller", func(context.Context) (*dCaller, error) { return &dCaller{}, nil })
	// run makes n calls add(base+i) without waiting, then gets them all;
	// runFar does it on a far log.
	dCallerRun    = gray.Method3(dCallerType, "run", runCalls(dLogAdd))
	dCallerRunFar = gray.Method3(dCallerType, "runFar", runCalls(dFarLogAdd))
	// start calls add(1), block(g) and add(2), keeping the references;
	// it returns its own process ID. startR does it on a restartable log
	// and startFar on a far one.
	dCallerStart    = gray.Method2(dCallerType, "start", startCalls(dLogAdd, dLogBlock))
	dCallerStartR   = gray.Method2(dCallerType, "startR", startCalls(dRLogAdd, dRLogBlock))
	dCallerStartFar = gray.Method2(dCallerType, "startFar", startCalls(dFarLogAdd, dFarLogBlock))
	// finish gets the kept references: "ok" or the error, for each.
	dCallerFinish = gray.Method0(dCallerType, "finish", finishCalls)
	// pass hands the result of a direct call on to a task: the driver
	// must find it.
	dCallerPass = gray.Method1(dCallerType, "pass", func(c *dCaller, ctx context.Context, h gray.Handle[dLog]) (int, error) {
		r := dLogAdd.Remote(h, 5)
		return gray.Get(ctx, dPlusOne.Remote(r))
	})
	// waitFree waits for one of a blocked call and a quick one (the quick
	// one is ready, the blocked one not), then frees the quick one: a Get
	// of it then fails with ErrFreed. It opens the gate before returning.
	dCallerWaitFree = gray.Method2(dCallerType, "waitFree", func(c *dCaller, ctx context.Context, h gray.Handle[dLog], g string) (string, error) {
		blocked, quick := dLogBlock.Remote(h, g), dPlusOne.Remote(1)
		more := dLogAdd.Remote(h, 7)
		ready, rest, err := gray.Wait(ctx, []gray.Ref[int]{blocked, quick}, 1, 0)
		if err != nil {
			return "", err
		}
		if len(ready) != 1 || ready[0].ID() != quick.ID() || len(rest) != 1 {
			return fmt.Sprintf("Wait(1) returned %d ready, %d not", len(ready), len(rest)), nil
		}
		if err := os.WriteFile(g, nil, 0o644); err != nil {
			return "", err
		}
		ready, _, err = gray.Wait(ctx, []gray.Ref[int]{blocked, more}, 2, 0)
		if err != nil || len(ready) != 2 {
			return fmt.Sprintf("Wait(2) after the gate opened: %d ready, %v", len(ready), err), nil
		}
		if err := gray.Free(ctx, more); err != nil {
			return "", err
		}
		if _, err := gray.Get(ctx, more); !errors.Is(err, gray.ErrFreed) {
			return fmt.Sprintf("Get of a freed direct result: %v, want ErrFreed", err), nil
		}
		return "ok", nil
	})
	dPlusOne = gray.Func1("test.direct.plusOne", func(_ context.Context, x int) (int, error) { return x + 1, nil })
)

// finishCalls is a caller's method that gets the kept references: "ok"
// or the error, for each.
func finishCalls(c *dCaller, ctx context.Context) ([]string, error) {
	out := make([]string, len(c.refs))
	for i, r := range c.refs {
		out[i] = "ok"
		if _, err := gray.Get(ctx, r); err != nil {
			out[i] = err.Error()
			if !errors.Is(err, gray.ErrActorDead) {
				out[i] = "not ErrActorDead: " + err.Error()
			}
		}
	}
	c.refs = nil
	return out, nil
}

// runCalls is a caller's method that makes n calls add(base+i) of a log
// without waiting, then gets them all.
func runCalls(add *gray.ActorMethod1[dLog, int, int]) func(*dCaller, context.Context, gray.Handle[dLog], int, int) ([]int, error) {
	return func(c *dCaller, ctx context.Context, h gray.Handle[dLog], base, n int) ([]int, error) {
		refs := make([]gray.Ref[int], n)
		for i := range refs {
			refs[i] = add.Remote(h, base+i)
		}
		return gray.GetAll(ctx, refs)
	}
}

// startCalls is a caller's method that calls add(1), block(g) and add(2)
// of a log, keeping the references, and returns its own process ID.
func startCalls(add *gray.ActorMethod1[dLog, int, int], block *gray.ActorMethod1[dLog, string, int]) func(*dCaller, context.Context, gray.Handle[dLog], string) (int, error) {
	return func(c *dCaller, ctx context.Context, h gray.Handle[dLog], g string) (int, error) {
		c.refs = append(c.refs, add.Remote(h, 1), block.Remote(h, g), add.Remote(h, 2))
		return os.Getpid(), nil
	}
}

// newActor creates an actor of typ, failing the test when it cannot.
func newActor[T any](t *testing.T, ctx context.Context, typ *gray.ActorType[T]) gray.Handle[T] {
	t.Helper()
	h, err := typ.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// blockedCaller creates a caller whose start (a startCalls method) calls
// callee three times, the second call blocked on a fresh gate, and waits
// for that call to run. It returns the caller, the gate, the caller's
// process ID and the process ID running the blocked call.
func blockedCaller(t *testing.T, ctx context.Context, start *gray.ActorMethod2[dCaller, gray.Handle[dLog], string, int], callee gray.Handle[dLog]) (c gray.Handle[dCaller], g gate, callerPID, calleePID int) {
	t.Helper()
	return blockedCallerOf(t, ctx, dCallerType, start, callee)
}

// blockedCallerOf is blockedCaller with a caller of type typ.
func blockedCallerOf(t *testing.T, ctx context.Context, typ *gray.ActorType[dCaller], start *gray.ActorMethod2[dCaller, gray.Handle[dLog], string, int], callee gray.Handle[dLog]) (c gray.Handle[dCaller], g gate, callerPID, calleePID int) {
	t.Helper()
	c = newActor(t, ctx, typ)
	g = newGate(t, "block")
	callerPID, err := gray.Get(ctx, start.Remote(c, callee, string(g)))
	if err != nil {
		t.Fatal(err)
	}
	return c, g, callerPID, waitStarted(t, g)
}

// startDirect starts a session whose actors call actors directly.
func startDirect(t *testing.T) context.Context {
	t.Setenv(task.EnvDirect, "1")
	return start(t, gray.Options{NumCPUs: 2, NoGPUs: true})
}

// actorState returns the driver's view of actor h.
func actorState(t *testing.T, s state.Snapshot, h gray.Handle[dLog]) state.ActorState {
	t.Helper()
	for _, a := range s.Actors {
		if a.ID == h.ID() {
			return a
		}
	}
	t.Fatalf("actor %s is not in the driver's snapshot", h.ID())
	return state.ActorState{}
}

// waitStarted waits for block(g) to start and returns its process ID.
func waitStarted(t *testing.T, g gate) int {
	t.Helper()
	var pid int
	clustertest.WaitFor(t, 30*time.Second, "the blocking call to start", func() bool {
		b, err := os.ReadFile(string(g) + ".started")
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	})
	return pid
}

// Two actors call a third directly, each many calls without waiting: each
// caller's calls run in the order it made them, and each sees its own
// results.
func TestDirectActorCallsKeepEachCallersOrder(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	a := newActor(t, ctx, dCallerType)
	b := newActor(t, ctx, dCallerType)
	const n = 500
	ra, rb := dCallerRun.Remote(a, log, 0, n), dCallerRun.Remote(b, log, 10000, n)
	for _, r := range []gray.Ref[[]int]{ra, rb} {
		lens, err := gray.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(lens); i++ {
			if lens[i] <= lens[i-1] {
				t.Fatalf("call %d saw the log at %d entries after call %d saw %d: the calls ran out of order", i, lens[i], i-1, lens[i-1])
			}
		}
	}
	got, err := gray.Get(ctx, dLogList.Remote(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n {
		t.Fatalf("the log has %d entries, want %d", len(got), 2*n)
	}
	next := map[bool]int{false: 0, true: 10000}
	for i, x := range got {
		fromB := x >= 10000
		if x != next[fromB] {
			t.Fatalf("entry %d is %d, want %d: a caller's calls ran out of order", i, x, next[fromB])
		}
		next[fromB]++
	}
}

// Direct calls bypass the driver: while the callee runs one, the driver
// sees no call of that actor pending. A result passed on to a task is
// found by the driver.
func TestDirectActorCallsBypassTheDriver(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	c, g, _, _ := blockedCaller(t, ctx, dCallerStart, log)
	s, err := gray.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if p := actorState(t, s, log).Pending; p != 0 {
		t.Errorf("the driver counts %d calls of the callee pending; direct calls should not pass through it", p)
	}
	if n := actorState(t, s, log).DirectCallers; n != 1 {
		t.Errorf("the state shows %d direct callers of the callee, want 1 (its calls bypass the driver)", n)
	}
	g.open(t)
	res, err := gray.Get(ctx, dCallerFinish.Remote(c))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res) != "[ok ok ok]" {
		t.Fatalf("the direct calls returned %v, want [ok ok ok]", res)
	}
	if v, err := gray.Get(ctx, dCallerPass.Remote(c, log)); err != nil || v != 4 {
		t.Fatalf("a task given a direct call's result returned %d, %v; want 4 (log length 3, plus one)", v, err)
	}
}

// Wait and Free of the results of direct calls, in the caller, mixed with
// a task's result (which the driver holds).
func TestDirectResultsWaitAndFree(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	c := newActor(t, ctx, dCallerType)
	g := newGate(t, "block")
	if got, err := gray.Get(ctx, dCallerWaitFree.Remote(c, log, string(g))); err != nil || got != "ok" {
		t.Fatalf("waitFree: %q, %v", got, err)
	}
}

// The callee's process is killed while it runs a direct call: that call
// and the one queued behind it fail with ErrActorDead, as calls the driver
// had sent would (the one before it succeeded), and later calls fail too.
func TestDirectCalleeKilledMidCall(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	c, _, _, calleePID := blockedCaller(t, ctx, dCallerStart, log)
	if err := syscall.Kill(calleePID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := gray.Get(ctx, dCallerFinish.Remote(c))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0] != "ok" {
		t.Fatalf("the calls of the killed actor: %q, want the first ok", res)
	}
	for i, r := range res[1:] {
		if r == "ok" || strings.HasPrefix(r, "not ErrActorDead:") {
			t.Fatalf("call %d of the killed actor: %q, want an ErrActorDead failure", i+2, r)
		}
	}
	if _, err := gray.Get(ctx, dCallerRun.Remote(c, log, 0, 3)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("calls made after the callee died: %v, want ErrActorDead", err)
	}
}

// A callee that may be restarted is called through the driver (which
// keeps its replay log): killed mid-call, it is restarted and the call is
// replayed, as without direct calls.
func TestDirectCallsOfRestartableActorReplay(t *testing.T) {
	ctx := startDirect(t)
	rlog := newActor(t, ctx, dRLogType)
	c, g, _, pid := blockedCaller(t, ctx, dCallerStartR, rlog)
	s, err := gray.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if p := actorState(t, s, rlog).Pending; p != 2 {
		t.Fatalf("the driver counts %d calls of the restartable callee pending, want 2: they go through it", p)
	}
	g.open(t) // the replayed call finds it open
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := gray.Get(ctx, dCallerFinish.Remote(c))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res) != "[ok ok ok]" {
		t.Fatalf("the calls of the restarted actor returned %v, want [ok ok ok]", res)
	}
}

// The caller's process is killed with direct calls queued at the callee:
// the callee lives on and answers others.
func TestDirectCallerKilled(t *testing.T) {
	ctx := startDirect(t)
	log := newActor(t, ctx, dLogType)
	c, g, callerPID, _ := blockedCaller(t, ctx, dCallerStart, log)
	if err := syscall.Kill(callerPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, dCallerFinish.Remote(c)); !errors.Is(err, gray.ErrActorDead) {
		t.Fatalf("a call of the killed caller: %v, want ErrActorDead", err)
	}
	g.open(t)
	got, err := gray.Get(ctx, dLogList.Remote(log))
	if err != nil {
		t.Fatalf("the callee after its caller died: %v", err)
	}
	if len(got) == 0 || got[0] != 1 || len(got) > 2 {
		t.Fatalf("the callee's log is %v, want [1] or [1 2]: the calls the dead caller had sent ran once", got)
	}
}

// On a cluster, an actor on the driver's machine calls an actor on
// another node directly (TCP, with the cluster token's handshake), in
// order.
func TestClusterDirectCallToAnotherNode(t *testing.T) {
	t.Setenv(task.EnvDirect, "1")
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 2, NodeResources: map[int]map[string]float64{1: {"far": 1}}})
	initCluster(t, c)
	waitResources(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	far := newActor(t, ctx, dFarLogType)
	if where, err := gray.Get(ctx, dFarLogWhere.Remote(far)); err != nil || where != c.Node(1).ID {
		t.Fatalf("the callee runs on %q (%v), want node 1 (%s)", where, err, c.Node(1).ID)
	}
	caller, g, _, _ := blockedCaller(t, ctx, dCallerStartFar, far)
	bypassed(t, ctx, far, g, dCallerFinish, caller, "to node 1")
	const n = 200
	lens, err := gray.Get(ctx, dCallerRunFar.Remote(caller, far, 0, n))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lens {
		if l != i+3 {
			t.Fatalf("call %d saw the log at %d entries, want %d: calls lost or out of order", i, l, i+3)
		}
	}
}

// dBack passes a direct call's result on before it arrives, while the
// callee (a dEcho) calls it back before answering.
type dBack struct{}

// dEcho calls a dBack back.
type dEcho struct{}

var (
	dEchoType = gray.Actor0("test.direct.Echo", func(context.Context) (*dEcho, error) { return &dEcho{}, nil })
	dBackType = gray.Actor0("test.direct.Back", func(context.Context) (*dBack, error) { return &dBack{}, nil })
	dBackPing = gray.Method1(dBackType, "ping", func(_ *dBack, _ context.Context, x int) (int, error) { return x, nil })
	// callBack returns what back's ping(x) returns.
	dEchoCallBack = gray.Method2(dEchoType, "callBack", func(_ *dEcho, ctx context.Context, back gray.Handle[dBack], x int) (int, error) {
		return gray.Get(ctx, dBackPing.Remote(back, x))
	})
	// relay calls echo.callBack(self, 5), hands its result, not yet
	// arrived, to a task and returns that task's reference without
	// waiting.
	dBackRelay = gray.Method2(dBackType, "relay", func(_ *dBack, _ context.Context, echo gray.Handle[dEcho], self gray.Handle[dBack]) (gray.Ref[int], error) {
		return dPlusOne.Remote(dEchoCallBack.Remote(echo, self, 5)), nil
	})
)

// An actor passes on a reference to a direct call's result before it
// arrives, and the callee calls that actor back before it answers: the
// reference goes out as a promise, so the actor is free to take the call
// back (waiting for the result there deadlocked, where the driver's path
// does not), and the task that took the reference gets the value.
func TestDirectResultPassedOnBeforeItArrives(t *testing.T) {
	ctx := startDirect(t)
	echo, back := newActor(t, ctx, dEchoType), newActor(t, ctx, dBackType)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := gray.Get(cctx, dBackRelay.Remote(back, echo, back))
	if err != nil {
		t.Fatalf("relay: %v (it waited for the result it passed on, which waits for this actor)", err)
	}
	if got, err := gray.Get(cctx, r); err != nil || got != 6 {
		t.Fatalf("the task given the result = %d, %v; want 6", got, err)
	}
}

var (
	// passOn hands the result of a blocked direct call to a task and
	// returns the task's reference.
	dCallerPassOn = gray.Method2(dCallerType, "passOn", func(_ *dCaller, _ context.Context, h gray.Handle[dLog], g string) (gray.Ref[int], error) {
		return dPlusOne.Remote(dLogBlock.Remote(h, g)), nil
	})
	dCallerPID = gray.Method0(dCallerType, "pid", func(*dCaller, context.Context) (int, error) { return os.Getpid(), nil })
)

// The caller that passed on a reference to its direct call's result dies
// before the result arrives: the task that took the reference fails with
// ErrWorkerDied instead of waiting for ever.
func TestDirectPromiseBrokenByCallerDeath(t *testing.T) {
	ctx := startDirect(t)
	log, c := newActor(t, ctx, dLogType), newActor(t, ctx, dCallerType)
	g := newGate(t, "block")
	r, err := gray.Get(ctx, dCallerPassOn.Remote(c, log, string(g)))
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, g)
	pid, err := gray.Get(ctx, dCallerPID.Remote(c))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := gray.Get(cctx, r); !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("the task given the dead caller's result: %v, want ErrWorkerDied", err)
	}
	g.open(t)
}

// bypassed checks, while the second of three direct calls of callee
// (startCalls) is blocked on g, that the driver counts none of its calls
// pending; then it opens g and checks that caller's finish (a
// finishCalls method) gets the three results. where says where the calls
// went.
func bypassed(t *testing.T, ctx context.Context, callee gray.Handle[dLog], g gate, finish *gray.ActorMethod0[dCaller, []string], caller gray.Handle[dCaller], where string) {
	t.Helper()
	s, err := gray.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if p := actorState(t, s, callee).Pending; p != 0 {
		t.Errorf("the driver counts %d calls %s pending; direct calls should not pass through it", p, where)
	}
	g.open(t)
	if res, err := gray.Get(ctx, finish.Remote(caller)); err != nil || fmt.Sprint(res) != "[ok ok ok]" {
		t.Fatalf("the direct calls %s returned %v, %v; want [ok ok ok]", where, res, err)
	}
}
