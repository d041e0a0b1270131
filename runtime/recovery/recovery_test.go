package recovery

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// The tests step a core through tables of events and compare the effects
// each step leaves, written one a line (see show), as etcd raft's
// interaction tests do: what the driver does when something is lost,
// without a process.

var (
	root = ids.Root(1, true)
	// f(a) -> r: a function task whose argument a is a reference.
	tf  = ids.Child(root, 1)
	a   = ids.Put(root, 1)
	r   = ids.Return(tf, 0)
	put = ids.Put(root, 2)
	// g() -> q0, q1: a task with two returns and no reference argument.
	tg     = ids.Child(root, 2)
	q0, q1 = ids.Return(tg, 0), ids.Return(tg, 1)
	// m: a return of an actor method (no lineage).
	m = ids.Return(ids.Child(root, 3), 0)

	names = map[ids.ObjectID]string{a: "a", r: "r", put: "put", q0: "q0", q1: "q1", m: "m"}
	fspec = &task.Spec{ID: tf, Func: "f", NumReturns: 1, Args: []task.Arg{{IsRef: true, Ref: a}}}
	gspec = &task.Spec{ID: tg, Func: "g", NumReturns: 2}
	t0    = time.Unix(1000, 0)
)

// tk is the shell's task in the tests.
type tk string

func name(id ids.ObjectID) string {
	if s, ok := names[id]; ok {
		return s
	}
	return id.String()[:8]
}

func nameAll(v []ids.ObjectID) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = name(id)
	}
	return strings.Join(s, ",")
}

// show writes an effect on one line.
func show(e Effect[tk]) string {
	switch e.Kind {
	case Claim:
		return fmt.Sprintf("claim %s for %s", nameAll(e.Refs), name(e.ID))
	case Release:
		return fmt.Sprintf("release %s of %s", nameAll(e.Refs), name(e.ID))
	case GiveUp:
		return fmt.Sprintf("give up %s: %v", name(e.ID), lostReason(e.Err))
	case Replace, Lose:
		verb := map[Kind]string{Replace: "replace", Lose: "lose"}[e.Kind]
		return fmt.Sprintf("%s %s: %v", verb, name(e.ID), lostReason(e.Object.Err))
	case Discard:
		return "discard " + name(e.ID)
	case Resubmit:
		return fmt.Sprintf("resubmit %s for %s", e.Spec.Func, name(e.ID))
	case Rerun:
		if e.Refetch {
			return fmt.Sprintf("rerun %s refetching", e.Task)
		}
		return fmt.Sprintf("rerun %s", e.Task)
	case Fail:
		if e.Worker != "" {
			return fmt.Sprintf("fail %s on %s: %s", e.Task, e.Worker, e.Message)
		}
		return fmt.Sprintf("fail %s: %s", e.Task, e.Message)
	case Locate:
		return fmt.Sprintf("locate %s on %d: %v", name(e.ID), e.Node, e.Holds)
	case Orphaned:
		return fmt.Sprintf("orphaned %s (gone %v): %s", name(e.ID), e.Gone, e.Message)
	case ReleaseCopies:
		return fmt.Sprintf("release copies of %s on %v", name(e.ID), e.Nodes)
	case StopSpawning:
		return fmt.Sprintf("stop spawning after %d: %s", e.Count, e.Message)
	case DropNode:
		return fmt.Sprintf("drop node %d: %s", e.Node, e.Message)
	case ForgetNode:
		return fmt.Sprintf("forget node %d (%s)", e.Node, e.Name)
	}
	return fmt.Sprintf("effect %d", e.Kind)
}

// lostReason names the task.ErrLost reason of a lost object's error, and
// whether its owner died.
func lostReason(err *task.TaskError) string {
	var s []string
	for _, r := range []struct {
		err  error
		name string
	}{{task.ErrLostPut, "a put"}, {task.ErrLostActorMethod, "an actor's result"}, {task.ErrLostRetriesExhausted, "retries exhausted"},
		{task.ErrLostOwnerDied, "owner died"}, {objstore.ErrEvicted, "evicted"}} {
		if errors.Is(err, r.err) {
			s = append(s, r.name)
		}
	}
	if len(s) == 0 {
		return err.Error()
	}
	return strings.Join(s, ", ")
}

type step struct {
	ev   Event
	want []string
}

func run(t *testing.T, c *Core[tk], steps []step) {
	t.Helper()
	for i, s := range steps {
		c.Step(s.ev)
		var got []string
		for _, e := range c.Effects() {
			got = append(got, show(e))
		}
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%T %+v):\n got  %q\n want %q", i, s.ev, s.ev, got, s.want)
		}
	}
}

var (
	errTask = &task.TaskError{Function: "f", Message: "boom"}
	errFull = &task.TaskError{Function: "f", Message: "reserving room: " + objstore.ErrFull.Error()}
)

func TestLineage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a shared result records its lineage and claims its arguments until freed", []step{
			{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
			{Stored{ID: r, Lineage: fspec, Shared: true}, nil}, // recorded once
			{Freed{ID: r, Shared: true}, []string{"release a of r"}},
			{Freed{ID: r, Shared: true}, nil},
		}},
		{"inline, failed or lineage-less results record nothing", []step{
			{Stored{ID: r, Lineage: fspec}, nil},
			{Stored{ID: r, Lineage: fspec, Shared: true, Err: errTask}, nil},
			{Stored{ID: m, Shared: true}, nil},
			{Freed{ID: r, Shared: true}, nil},
		}},
		{"an evicted object without lineage is lost for good", []step{
			{Missing{ID: put}, []string{"replace put: a put, evicted"}},
			{Missing{ID: m}, []string{"replace m: an actor's result, evicted"}},
		}},
		{"an evicted result is rebuilt once however often it is asked for", []step{
			{Stored{ID: q0, Lineage: gspec, Shared: true}, nil},
			{Stored{ID: q1, Lineage: gspec, Shared: true}, nil},
			{Missing{ID: q1}, []string{"resubmit g for q1"}},
			{Missing{ID: q0}, nil},
			{Stored{ID: q0, Lineage: gspec, Shared: true, Rebuilt: true}, nil},
			{Ended[tk]{ID: tg}, nil},
			{Missing{ID: q0}, []string{"resubmit g for q0"}},
		}},
		{"a rebuild that fails is tried again when next asked for, up to the limit", []step{
			{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
			{Missing{ID: r}, []string{"resubmit f for r"}},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Ended[tk]{ID: tf}, nil},
			{Missing{ID: r}, []string{"discard r", "resubmit f for r"}},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Ended[tk]{ID: tf}, nil},
			{Missing{ID: r}, []string{"discard r", "resubmit f for r"}},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, []string{"give up r: retries exhausted"}},
			{Ended[tk]{ID: tf}, nil},
			{Freed{ID: r, Shared: true}, []string{"release a of r"}},
		}},
		{"no room in the store is not counted", []step{
			{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
			{Missing{ID: r}, []string{"resubmit f for r"}},
			{Stored{ID: r, Err: errFull, Rebuilt: true}, nil},
			{Ended[tk]{ID: tf}, nil},
			{Missing{ID: r}, []string{"discard r", "resubmit f for r"}},
			{Stored{ID: r, Err: errFull, Rebuilt: true}, nil},
			{Ended[tk]{ID: tf}, nil},
			{Missing{ID: r}, []string{"discard r", "resubmit f for r"}},
			{Stored{ID: r, Err: errFull, Rebuilt: true}, nil},
			{Ended[tk]{ID: tf}, nil},
			{Missing{ID: r}, []string{"discard r", "resubmit f for r"}},
			{Stored{ID: r, Lineage: fspec, Shared: true, Rebuilt: true}, nil},
		}},
		{"a success starts the count again", []step{
			{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Stored{ID: r, Lineage: fspec, Shared: true, Rebuilt: true}, nil},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, nil},
			{Stored{ID: r, Err: errTask, Rebuilt: true}, []string{"give up r: retries exhausted"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, New[tk](Limits{}), tc.steps) })
	}
}

func TestRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a task whose remote worker died runs again, then fails", []step{
			{TaskLost[tk]{Task: "t", Why: "worker 1 died"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Why: "worker 2 died"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Why: "worker 3 died"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Why: "worker 4 died"}, []string{"fail t: tried 4 times; the last time worker 4 died"}},
			{TaskLost[tk]{Task: "t", Why: "worker 5 died"}, []string{"rerun t"}},
		}},
		{"a task whose worker on another node died names the worker", []step{
			{TaskLost[tk]{Task: "t", Worker: "worker 3 on b", Why: "signal: killed"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Why: "node b died (killed)"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Worker: "worker 9 on c", Why: "exit status 2"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "t", Worker: "worker 12 on c", Why: "exit status 2"}, []string{"fail t: tried 4 times; the last time worker 12 on c died (exit status 2)"}},
		}},
		{"a task whose worker on this machine died fails at once, uncounted", []step{
			{TaskLost[tk]{Task: "t", Worker: "worker 1 (pid 7)", Why: "signal: killed", Local: true},
				[]string{"fail t on worker 1 (pid 7): the worker process died while running it (signal: killed)"}},
			{TaskLost[tk]{Task: "t", Why: "x"}, []string{"rerun t"}},
			{Ended[tk]{Task: "t"}, nil},
		}},
		{"an ended task's count is forgotten", []step{
			{TaskLost[tk]{Task: "t", Why: "x"}, []string{"rerun t"}},
			{TaskLost[tk]{Task: "u", Why: "x"}, []string{"rerun u"}},
			{Ended[tk]{Task: "t"}, nil},
		}},
		{"a failed pull drops the holder pulled from and runs the task again", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{NodeAdded{Node: 2, Name: "c"}, nil},
			{Held{ID: put, Node: 1}, []string{"locate put on 1: true"}},
			{Held{ID: put, Node: 2}, []string{"locate put on 2: true"}},
			{Held{ID: put, Node: 1}, nil},
			{PullFailed[tk]{Task: "t", ID: put, Why: "refused"}, []string{"locate put on 1: false", "rerun t refetching"}},
			{PullFailed[tk]{Task: "t", ID: put, Why: "refused"}, []string{"locate put on 2: false", "orphaned put (gone false): refused", "rerun t refetching"}},
			{PullFailed[tk]{Task: "t", ID: put, Why: "refused"}, []string{"rerun t refetching"}},
			{PullFailed[tk]{Task: "t", ID: put, Why: "refused"}, nil},
		}},
		{"a failed pull of an object the driver holds keeps the holder", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{Held{ID: put, Node: 1}, []string{"locate put on 1: true"}},
			{PullFailed[tk]{Task: "t", ID: put, Why: "x", Local: true}, []string{"rerun t refetching"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New[tk](Limits{Cluster: true})
			run(t, c, tc.steps)
		})
	}
	c := New[tk](Limits{})
	run(t, c, []step{{TaskLost[tk]{Task: "t"}, []string{"rerun t"}}, {TaskLost[tk]{Task: "u"}, []string{"rerun u"}}, {Ended[tk]{Task: "u"}, nil}})
	if err := c.Check(func(x tk) bool { return x == "t" }, func(x tk) string { return string(x) }); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(func(tk) bool { return false }, func(x tk) string { return string(x) }); err == nil {
		t.Fatal("Check missed the run count of an ended task")
	}
}

func TestObjectsOnNodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"freeing an object releases it where it was held and sent", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{NodeAdded{Node: 2, Name: "c"}, nil},
			{Held{ID: put, Node: 2}, []string{"locate put on 2: true"}},
			{Sent{ID: put, Node: 1}, nil},
			{Freed{ID: put, Shared: true}, []string{"locate put on 2: false", "release copies of put on [1 2]"}},
		}},
		{"an object pinned by a running task is released at its last unpin", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{Held{ID: put, Node: 1}, []string{"locate put on 1: true"}},
			{Pinned{ID: put}, nil},
			{Pinned{ID: put}, nil},
			{Freed{ID: put, Shared: true}, nil},
			{Unpinned{ID: put}, nil},
			{Unpinned{ID: put}, []string{"locate put on 1: false", "release copies of put on [1]"}},
		}},
		{"a node's death loses what only it held: a Put for good, a result until rebuilt", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{NodeAdded{Node: 2, Name: "c"}, nil},
			{Held{ID: put, Node: 1}, []string{"locate put on 1: true"}},
			{Held{ID: r, Node: 1}, []string{"locate r on 1: true"}},
			{Held{ID: q0, Node: 1}, []string{"locate q0 on 1: true"}},
			{Held{ID: q0, Node: 2}, []string{"locate q0 on 2: true"}},
			{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
			{NodeGone{Node: 1, Why: "killed"}, []string{"orphaned put (gone true): node b died (killed)", "orphaned r (gone true): node b died (killed)", "forget node 1 (b)"}},
			{Lost{ID: put, Why: "node b died (killed)", Gone: true, At: t0}, []string{"lose put: a put, owner died"}},
			{Lost{ID: r, Why: "node b died (killed)", Gone: true, At: t0}, nil},
			{Lost{ID: r, Why: "again", Gone: true, At: t0}, nil}, // counted once
			{Missing{ID: r}, []string{"resubmit f for r"}},
			{Stored{ID: r, Lineage: fspec, Shared: true, Rebuilt: true, At: t0.Add(time.Second)}, nil},
		}},
		{"an actor method's result lost with its node", []step{
			{NodeAdded{Node: 1, Name: "b"}, nil},
			{Held{ID: m, Node: 1}, []string{"locate m on 1: true"}},
			{HolderGone{ID: m, Node: 1, Why: "pull failed"}, []string{"locate m on 1: false", "orphaned m (gone false): pull failed"}},
			{Lost{ID: m, Why: "pull failed"}, []string{"lose m: an actor's result"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, New[tk](Limits{Cluster: true}), tc.steps) })
	}
	c := New[tk](Limits{Cluster: true})
	run(t, c, []step{
		{NodeAdded{Node: 1, Name: "b"}, nil},
		{Held{ID: r, Node: 1}, []string{"locate r on 1: true"}},
		{Stored{ID: r, Lineage: fspec, Shared: true}, []string{"claim a for r"}},
		{HolderGone{ID: r, Node: 1, Why: "x", Gone: true}, []string{"locate r on 1: false", "orphaned r (gone true): x"}},
		{Lost{ID: r, Why: "x", At: t0}, nil},
		{Missing{ID: r}, []string{"resubmit f for r"}},
		{Stored{ID: r, Lineage: fspec, Shared: true, Rebuilt: true, At: t0.Add(time.Second)}, nil},
	})
	if s := c.Stats(); s.Lost != 1 || s.Rebuilt != 1 || !s.LastRebuilt.Equal(t0.Add(time.Second)) {
		t.Fatalf("stats %+v: want 1 lost, 1 rebuilt at t0+1s", s)
	}
}

func TestBadStarts(t *testing.T) {
	run(t, New[tk](Limits{}), []step{
		{StartFailed{Err: errors.New("exit 1")}, nil},
		{StartFailed{Err: errors.New("exit 1")}, nil},
		{Connected{}, nil},
		{StartFailed{Err: errors.New("exit 1")}, nil},
		{StartFailed{Err: errors.New("exit 1")}, nil},
		{StartFailed{Err: errors.New("exit 2")}, []string{"stop spawning after 3: exit 2"}},
		{StartFailed{Err: errors.New("exit 2")}, nil},
		{StartFailed{Node: 1, Err: errors.New("x")}, nil},
		{StartFailed{Node: 1, Err: errors.New("x")}, nil},
		{Connected{Node: 1}, nil},
		{StartFailed{Node: 1, Err: errors.New("x")}, nil},
		{StartFailed{Node: 1, Err: errors.New("x")}, nil},
		{StartFailed{Node: 1, Err: errors.New("y")}, []string{"drop node 1: 3 workers in a row ended before connecting: y"}},
	})
	// Workers that exited without an error say so.
	run(t, New[tk](Limits{BadStarts: 1}), []step{
		{StartFailed{Node: 2}, []string{"drop node 2: 1 workers in a row ended before connecting: they exited"}},
		{StartFailed{}, []string{"stop spawning after 1: exited"}},
	})
}

// TestNoWorkers: what waited for a worker when none can start fails with
// one message that says what to do, whatever it was.
func TestNoWorkers(t *testing.T) {
	e := &NoWorkers{Count: 3, Last: "exit status 2"}
	for _, fn := range []string{"(worker start)", "main.f", "main.Counter"} {
		te := e.For(fn)
		if te.Function != fn || !errors.Is(te, e) {
			t.Errorf("For(%q) names %q and wraps %v", fn, te.Function, te.Cause)
		}
		for _, part := range []string{"3 worker processes in a row exited before connecting to the driver (last: exit status 2)", "gray.ServeIfWorker()"} {
			if !strings.Contains(te.Error(), part) {
				t.Errorf("For(%q) = %q; want it to say %q", fn, te.Error(), part)
			}
		}
	}
}
