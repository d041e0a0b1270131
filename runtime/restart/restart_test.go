package restart

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// The tests step a core through tables of events and compare the effects
// each step leaves, written one a line (see show), as etcd raft's
// interaction tests do: when an actor restarts and what it replays,
// without a process.

var (
	root  = ids.Root(1, true)
	actor = ids.Child(root, 1)
	// kid1, kid2: actors the actor creates.
	kid1, kid2 = ids.Child(actor, 1), ids.Child(actor, 2)
	arg        = ids.Put(root, 1)
	// create: the actor's creation; c1..c4: its calls (c2 takes arg).
	create = &task.Spec{ID: actor, Kind: task.KindActorCreate, Func: "Counter", NumReturns: 1}
	c1     = method(2, false)
	c2     = method(3, true)
	c3     = method(4, false)
	c4     = method(5, false)
	names  = map[ids.TaskID]string{actor: "create", kid1: "kid1", kid2: "kid2", c1.ID: "c1", c2.ID: "c2", c3.ID: "c3", c4.ID: "c4"}
	died   = &task.TaskError{Function: "Counter", Message: "its worker process died (exit status 1)", Cause: task.ErrWorkerDied}
)

func method(i uint64, ref bool) *task.Spec {
	s := &task.Spec{ID: ids.Child(root, i), Kind: task.KindActorMethod, Func: "Counter.Add", NumReturns: 1}
	if ref {
		s.Args = []task.Arg{{IsRef: true, Ref: arg}}
	}
	return s
}

func name(id ids.TaskID) string {
	if s, ok := names[id]; ok {
		return s
	}
	return id.String()[:8]
}

// show writes an effect on one line.
func show(e Effect) string {
	switch e.Kind {
	case Claim, Release:
		verb := map[Kind]string{Claim: "claim", Release: "release"}[e.Kind]
		return fmt.Sprintf("%s %s (%d refs)", verb, name(e.Spec.ID), len(e.Spec.Args))
	case Restart:
		var r []string
		for _, x := range e.Replay {
			s := name(x.Spec.ID)
			if x.Discard {
				s += " discard"
			}
			r = append(r, s)
		}
		restore := ""
		if e.Restore != nil {
			restore = fmt.Sprintf(" restore %q", e.Restore.Args[0].Data)
		}
		return fmt.Sprintf("restart #%d: %s%s then [%s]", e.Count, name(e.Spec.ID), restore, strings.Join(r, ", "))
	case Die:
		return "die: " + e.Err.Message
	case Save:
		return fmt.Sprintf("save %q after %s", e.Data, name(e.Task))
	case DropCheckpoint:
		return "drop checkpoint"
	case End:
		return fmt.Sprintf("end %s (made by %s)", name(e.Actor), name(e.Parent))
	}
	return fmt.Sprintf("effect %d", e.Kind)
}

type step struct {
	ev   Event
	want []string
}

func run(t *testing.T, c *Core, steps []step) {
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

func lost(nodeLost bool) Died { return Died{Actor: actor, Why: died, NodeLost: nodeLost} }

const gaveUp = "die: its worker process died (exit status 1); it was restarted twice, the most its MaxRestarts allows"

func TestRestarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"an actor without restarts dies and keeps no log", Config{}, []step{
			{Created{Actor: actor, Spec: create}, nil},
			{Sent{Actor: actor, Call: c1}, nil},
			{lost(true), []string{"die: its worker process died (exit status 1)"}},
		}},
		{"calls that ran are replayed for their effect, those sent run again for their results", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{Sent{Actor: actor, Call: c1}, []string{"claim c1 (0 refs)"}},
			{Sent{Actor: actor, Call: c2}, []string{"claim c2 (1 refs)"}},
			{Done{Actor: actor, ID: c1.ID}, nil},
			{lost(false), []string{"restart #1: create then [c1 discard, c2]"}},
		}},
		{"MaxRestarts bounds the restarts, counted from each connection", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{lost(false), []string{"restart #1: create then []"}},
			// Lost again before the new process connected (its node and
			// its process both reported): the same restart.
			{lost(true), []string{"restart #1: create then []"}},
			{Placed{Actor: actor}, nil},
			{lost(false), []string{"restart #2: create then []"}},
			{Placed{Actor: actor}, nil},
			{lost(false), []string{gaveUp}},
		}},
		{"MaxRestarts -1 has no bound", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: -1}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil}, {lost(false), []string{"restart #1: create then []"}},
			{Placed{Actor: actor}, nil}, {lost(false), []string{"restart #2: create then []"}},
			{Placed{Actor: actor}, nil}, {lost(false), []string{"restart #3: create then []"}},
		}},
		{"on a cluster an actor survives its node, not its process", Config{Cluster: true, NodeLoss: 1}, []step{
			{Created{Actor: actor, Spec: create}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{lost(true), []string{"restart #1: create then []"}},
			{Placed{Actor: actor}, nil},
			{lost(false), []string{"die: its worker process died (exit status 1)"}},
		}},
		{"on a cluster NoRestarts keeps no log", Config{Cluster: true}, []step{
			{Created{Actor: actor, Spec: create, NoRestarts: true}, nil},
			{lost(true), []string{"die: its worker process died (exit status 1)"}},
		}},
		{"an actor that ends anyway is not restarted", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Died{Actor: actor, Why: died, Final: true}, []string{"die: its worker process died (exit status 1)"}},
		}},
		{"a checkpoint trims the log and is restored first", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{Sent{Actor: actor, Call: c1}, []string{"claim c1 (0 refs)"}},
			{Sent{Actor: actor, Call: c2}, []string{"claim c2 (1 refs)"}},
			{Sent{Actor: actor, Call: c3}, []string{"claim c3 (0 refs)"}},
			{Done{Actor: actor, ID: c1.ID}, nil},
			// A checkpoint after a call that has not run yet is no state
			// the log can replay from.
			{Checkpointed{Actor: actor, After: c2.ID, Data: []byte("early")}, nil},
			{Done{Actor: actor, ID: c2.ID}, nil},
			{Checkpointed{Actor: actor, After: c2.ID, Data: []byte("n=2")}, []string{`save "n=2" after c2`}},
			{Saved{Actor: actor, After: c2.ID}, []string{"release c1 (0 refs)", "release c2 (1 refs)"}},
			{Died{Actor: actor, Why: died, Checkpoint: []byte("n=2")}, []string{`restart #1: create restore "n=2" then [c3]`}},
		}},
		{"an unreadable checkpoint ends the actor", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{Sent{Actor: actor, Call: c1}, []string{"claim c1 (0 refs)"}},
			{Done{Actor: actor, ID: c1.ID}, nil},
			{Checkpointed{Actor: actor, After: c1.ID, Data: []byte("n=1")}, []string{`save "n=1" after c1`}},
			{Saved{Actor: actor, After: c1.ID}, []string{"release c1 (0 refs)"}},
			{Died{Actor: actor, Why: died, CheckpointErr: errors.New("disk gone")},
				[]string{"die: its worker process died (exit status 1); it could not be restarted: its checkpoint cannot be read (disk gone)"}},
		}},
		{"replays a dead process never got stay behind this restart's", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 3}, []string{"claim create (0 refs)"}},
			{Placed{Actor: actor}, nil},
			{Sent{Actor: actor, Call: c1}, []string{"claim c1 (0 refs)"}},
			{Sent{Actor: actor, Call: c2}, []string{"claim c2 (1 refs)"}},
			{Sent{Actor: actor, Call: c3}, []string{"claim c3 (0 refs)"}},
			{Done{Actor: actor, ID: c1.ID}, nil},
			{Done{Actor: actor, ID: c2.ID}, nil},
			{lost(false), []string{"restart #1: create then [c1 discard, c2 discard, c3]"}},
			{Placed{Actor: actor}, nil},
			// The new process got c1 and ran it, and was sent c2; c3
			// is still in the shell's queue when it dies.
			{Sent{Actor: actor, Call: c1}, nil},
			{Done{Actor: actor, ID: c1.ID}, nil},
			{Sent{Actor: actor, Call: c2}, nil},
			{lost(false), []string{"restart #2: create then [c1 discard, c2 discard]"}},
			// A new call after the replays is logged behind them.
			{Placed{Actor: actor}, nil},
			{Sent{Actor: actor, Call: c1}, nil},
			{Sent{Actor: actor, Call: c2}, nil},
			{Sent{Actor: actor, Call: c3}, nil},
			{Sent{Actor: actor, Call: c4}, []string{"claim c4 (0 refs)"}},
			{lost(false), []string{"restart #3: create then [c1 discard, c2 discard, c3, c4]"}},
		}},
		{"an actor dead for good releases its log and checkpoint", Config{}, []step{
			{Created{Actor: actor, Spec: create, MaxRestarts: 2}, []string{"claim create (0 refs)"}},
			{Sent{Actor: actor, Call: c1}, []string{"claim c1 (0 refs)"}},
			{Done{Actor: actor, ID: c1.ID}, nil},
			{Checkpointed{Actor: actor, After: c1.ID, Data: []byte("x")}, []string{`save "x" after c1`}},
			{Saved{Actor: actor, After: c1.ID}, []string{"release c1 (0 refs)"}},
			{Sent{Actor: actor, Call: c2}, []string{"claim c2 (1 refs)"}},
			{Dropped{Actor: actor}, []string{"release create (0 refs)", "release c2 (1 refs)", "drop checkpoint"}},
			{lost(false), []string{"die: its worker process died (exit status 1)"}},
		}},
		{"a NoRestarts actor's children end with it, in order", Config{Cluster: true}, []step{
			{Created{Actor: actor, Spec: create, NoRestarts: true}, nil},
			{Adopted{Parent: actor, Child: kid1}, nil},
			{Adopted{Parent: actor, Child: kid2}, nil},
			{lost(true), []string{"die: its worker process died (exit status 1)"}},
			{Dropped{Actor: actor}, []string{"end kid1 (made by create)", "end kid2 (made by create)"}},
			{Dropped{Actor: actor}, nil},
		}},
		{"other actors' children outlive them", Config{Cluster: true}, []step{
			{Created{Actor: actor, Spec: create}, []string{"claim create (0 refs)"}},
			{Adopted{Parent: actor, Child: kid1}, nil},
			{Dropped{Actor: actor}, []string{"release create (0 refs)"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, New(tc.cfg), tc.steps) })
	}
}

// The queries the shell reads: whether a call ran since the last
// checkpoint (a replayed caller must not make it twice), and the counts.
func TestQueries(t *testing.T) {
	c := New(Config{})
	c.Step(Created{Actor: actor, Spec: create, MaxRestarts: 1})
	c.Step(Placed{Actor: actor})
	c.Step(Sent{Actor: actor, Call: c1})
	if c.Logged(actor, c1.ID) {
		t.Fatal("a call sent and not done is logged as run")
	}
	c.Step(Done{Actor: actor, ID: c1.ID})
	if !c.Logged(actor, c1.ID) || c.Logged(actor, c2.ID) {
		t.Fatal("Logged: want c1 run, c2 not")
	}
	if r, l := c.Restarts(actor); r != 0 || l != 1 {
		t.Fatalf("Restarts = %d, %d; want 0 restarts, 1 call logged", r, l)
	}
	c.Step(lost(false))
	if r, l := c.Restarts(actor); r != 1 || l != 0 || c.Logged(actor, c1.ID) {
		t.Fatalf("after a restart: Restarts = %d, %d, c1 logged %v; want 1, 0 and not logged until it runs again", r, l, c.Logged(actor, c1.ID))
	}
	// The record the shell sends again must not be claimed twice.
	c.Effects()
	c.Step(Sent{Actor: actor, Call: c1})
	if e := c.Effects(); len(e) != 0 {
		t.Fatalf("a replayed call's send: %v, want no new claim", e)
	}
	if !c.Restartable(actor) || c.Saved(actor) {
		t.Fatal("want the actor restartable, with no checkpoint")
	}
}
