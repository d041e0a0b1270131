package actorq

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// The tests step an actor's queue through tables of events and compare
// the effects each step leaves, one a line (see show), as etcd raft's
// interaction tests and runtime/restart's do: the order calls go out in,
// which result is whose, and what an actor's calls get when it ends,
// without a process.

var (
	root  = ids.Root(1, true)
	actor = ids.Child(root, 1)
	boom  = &task.TaskError{Function: "Make", Message: "boom\nat line 3"}
	died  = &task.TaskError{Function: "Counter", Message: "its worker process died (exit status 1)", Cause: task.ErrWorkerDied}
)

// call is the shell's record in the tests: a task named by the table.
type call struct {
	name  string
	spec  *task.Spec
	again bool
}

func (c *call) Spec() *task.Spec { return c.spec }
func (c *call) Again() bool      { return c.again }

// world is the shell's side of a test: its calls by name and what it
// answers about their arguments.
type world struct {
	calls  map[string]*call
	wait   map[string]bool
	failed map[string]*task.TaskError
	n      uint64
}

// get returns call name, made on first use: "create" is the creation
// task, "again restore" the restore of a checkpoint, a name starting
// with "again " a replayed call, any other a method call.
func (w *world) get(name string) *call {
	if c, ok := w.calls[name]; ok {
		return c
	}
	w.n++
	s := &task.Spec{ID: ids.Child(root, w.n+1), Kind: task.KindActorMethod, Func: "Counter." + name, NumReturns: 1}
	if name == "create" {
		s.ID, s.Kind, s.Func = actor, task.KindActorCreate, "Counter"
	}
	if name == "again restore" {
		s.Kind, s.Func = task.KindActorRestore, "Counter.Restore"
	}
	c := &call{name: name, spec: s, again: len(name) > 6 && name[:6] == "again "}
	w.calls[name] = c
	return c
}

func (w *world) check(c *call) (bool, *task.TaskError) { return w.wait[c.name], w.failed[c.name] }

// Test-only events: they change the shell's answers, not the queue.
type (
	// waits: call Name's arguments do not all exist yet.
	waits struct{ Name string }
	// exists: call Name's arguments exist (Failed: one failed).
	exists struct {
		Name   string
		Failed *task.TaskError
	}
	// submit: call Name is submitted (Queued), the worker Up or not.
	submit struct {
		Name string
		Up   bool
	}
	// returned: the result of call Name came (Returned).
	returned struct{ Name string }
	// requeue: the actor restarts and its new process runs Names (Requeue).
	requeue struct{ Names []string }
)

func (waits) event()    {}
func (exists) event()   {}
func (submit) event()   {}
func (returned) event() {}
func (requeue) event()  {}

// show writes an effect on one line.
func show(e Effect[*call]) string {
	switch e.Kind {
	case Send:
		return "send " + e.Call.name
	case ArgFailed:
		return "arg failed " + e.Call.name
	case Unsent:
		return "unsent " + e.Call.name
	case Died:
		return fmt.Sprintf("died: %s (actor dead: %v)", e.Err.Message, errors.Is(e.Err, task.ErrActorDead))
	case Fail:
		s := fmt.Sprintf("fail %s: %s", e.Call.name, e.Err.Message)
		if e.Quiet {
			s += " (quiet)"
		}
		return s
	case Gone:
		return "gone"
	case Ran:
		return "ran " + e.Call.name
	}
	return fmt.Sprintf("effect %d", e.Kind)
}

type step struct {
	ev   Event
	want []string
}

func run(t *testing.T, steps []step) *Actor[*call] {
	t.Helper()
	w := &world{calls: map[string]*call{}, wait: map[string]bool{}, failed: map[string]*task.TaskError{}}
	a := New(actor, "Counter", w.check)
	for i, s := range steps {
		switch e := s.ev.(type) {
		case waits:
			w.get(e.Name)
			w.wait[e.Name] = true
			continue
		case exists:
			w.get(e.Name)
			w.wait[e.Name], w.failed[e.Name] = false, e.Failed
			continue
		case submit:
			a.Step(Queued[*call]{Call: w.get(e.Name), Up: e.Up})
		case returned:
			a.Step(Returned{ID: w.get(e.Name).spec.ID})
		case requeue:
			var q []*call
			for _, n := range e.Names {
				q = append(q, w.get(n))
			}
			a.Step(Requeue[*call]{Queue: q})
		default:
			a.Step(s.ev)
		}
		var got []string
		for _, e := range a.Effects() {
			got = append(got, show(e))
		}
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%T %+v):\n got  %q\n want %q", i, s.ev, s.ev, got, s.want)
		}
	}
	return &a
}

// The messages a dead actor's calls get: the actor, named, and why.
const (
	deadKilled  = "actor Counter " + "%s is dead: it was killed"
	releasedWhy = "no handle to the actor remains"
	diedWhy     = "its worker process died (exit status 1)"
)

func dead(format string) string { return fmt.Sprintf(format, actor) }

func TestQueue(t *testing.T) {
	killed := &task.TaskError{Function: "Counter", Message: "it was killed", Cause: task.ErrActorDead}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the creation waits for the worker, then calls go out in order", []step{
			{submit{"create", false}, nil},
			{submit{"a", false}, nil},
			{Pump{Up: true}, []string{"send create", "send a"}},
			{submit{"b", true}, []string{"send b"}},
			{returned{"create"}, []string{"ran create"}},
			{returned{"a"}, []string{"ran a"}},
		}},
		{"a call whose argument does not exist yet holds back those behind it", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{waits{"a"}, nil},
			{submit{"a", true}, nil},
			{submit{"b", true}, nil},
			{exists{"a", nil}, nil},
			{Pump{Up: true}, []string{"send a", "send b"}},
		}},
		{"nothing goes out before the worker is up", []step{
			{submit{"create", false}, nil},
			{submit{"a", false}, nil},
			{Pump{Up: false}, nil},
		}},
		{"a result that is not the oldest call's is dropped", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{submit{"a", true}, []string{"send a"}},
			{returned{"a"}, nil},
			{returned{"create"}, []string{"ran create"}},
			{returned{"create"}, nil},
		}},
		{"a call whose argument failed fails alone; the next goes out", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{exists{"a", boom}, nil},
			{submit{"a", true}, []string{"arg failed a"}},
			{submit{"b", true}, []string{"send b"}},
		}},
		{"the constructor's failed argument ends the actor", []step{
			{exists{"create", boom}, nil},
			{submit{"create", false}, nil},
			{submit{"a", false}, nil},
			{Pump{Up: true}, []string{
				"died: an argument of the constructor failed (actor dead: true)",
				"fail a: " + dead("actor Counter %s is dead: an argument of the constructor failed"),
				"gone"}},
			{submit{"b", true}, []string{"fail b: " + dead("actor Counter %s is dead: an argument of the constructor failed")}},
		}},
		{"a replayed call's failed argument ends the actor: its state cannot be rebuilt", []step{
			{exists{"again a", boom}, nil},
			{requeue{[]string{"create", "again a", "b"}}, nil},
			{Pump{Up: true}, []string{
				"send create", "unsent again a",
				"died: replaying Counter.again a after a restart: an argument failed: task Make failed: boom (actor dead: true)",
				"fail create: " + dead("actor Counter %s is dead: replaying Counter.again a after a restart: an argument failed: task Make failed: boom"),
				"fail b: " + dead("actor Counter %s is dead: replaying Counter.again a after a restart: an argument failed: task Make failed: boom"),
				"gone"}},
		}},
		{"a killed actor's calls, sent then queued, fail quietly naming it", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{waits{"b"}, nil},
			{submit{"a", true}, []string{"send a"}},
			{submit{"b", true}, nil},
			{Kill{Why: killed}, []string{
				"died: it was killed (actor dead: true)",
				"fail create: " + dead(deadKilled) + " (quiet)",
				"fail a: " + dead(deadKilled) + " (quiet)",
				"fail b: " + dead(deadKilled) + " (quiet)",
				"gone"}},
			{Kill{Why: killed}, nil},
			{submit{"c", true}, []string{"fail c: " + dead(deadKilled) + " (quiet)"}},
			{returned{"a"}, nil},
		}},
		{"a process's death fails the calls loudly, as ErrActorDead", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{End{Why: died}, []string{
				"died: " + diedWhy + " (actor dead: true)",
				"fail create: " + dead("actor Counter %s is dead: "+diedWhy),
				"gone"}},
			{End{Why: died}, nil},
		}},
		{"released, an actor ends once its calls are done", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{submit{"a", true}, []string{"send a"}},
			{Release{HasWorker: true}, nil},
			// Released but not dead yet: a call is refused as to a dead actor.
			{submit{"b", true}, []string{"fail b: " + dead("actor Counter %s is dead")}},
			{returned{"create"}, []string{"ran create"}},
			{Finished{}, nil},
			{returned{"a"}, []string{"ran a"}},
			{Finished{}, []string{"died: " + releasedWhy + " (actor dead: true)", "gone"}},
		}},
		{"released with nothing to run, an actor with a worker ends at once", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{returned{"create"}, []string{"ran create"}},
			{Finished{}, nil},
			{Release{HasWorker: true}, []string{"died: " + releasedWhy + " (actor dead: true)", "gone"}},
			{Release{HasWorker: true}, nil},
		}},
		{"released while its queue waits for an argument, it ends after the last call is sent and done", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{waits{"a"}, nil},
			{submit{"a", true}, nil},
			{Release{HasWorker: true}, nil},
			{exists{"a", nil}, nil},
			{Pump{Up: true}, []string{"send a"}},
			{returned{"create"}, []string{"ran create"}},
			{returned{"a"}, []string{"ran a"}},
			{Finished{}, []string{"died: " + releasedWhy + " (actor dead: true)", "gone"}},
		}},
		{"a released actor whose last call's argument failed ends as its queue empties", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{returned{"create"}, []string{"ran create"}},
			{waits{"a"}, nil},
			{submit{"a", true}, nil},
			{Release{HasWorker: true}, nil},
			{exists{"a", boom}, nil},
			{Pump{Up: true}, []string{"arg failed a", "died: " + releasedWhy + " (actor dead: true)", "gone"}},
		}},
		{"a restart requeues: the sent calls are dropped from flight, the new queue goes out", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{submit{"a", true}, []string{"send a"}},
			{requeue{[]string{"again create", "again a"}}, nil},
			{returned{"a"}, nil},
			{Pump{Up: true}, []string{"send again create", "send again a"}},
			{returned{"again create"}, []string{"ran again create"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.steps) })
	}
}

// TestRestartable: a restartable actor stops being one when it dies.
func TestRestartable(t *testing.T) {
	a := run(t, []step{{Restartable{}, nil}})
	if !a.Restartable() {
		t.Fatal("not restartable after Restartable")
	}
	a.Step(End{Why: died})
	if a.Restartable() || !a.Dead() {
		t.Fatalf("after its death: restartable %v, dead %v", a.Restartable(), a.Dead())
	}
	a.Step(Restartable{})
	if a.Restartable() {
		t.Fatal("a dead actor became restartable")
	}
}

// TestQueries: what the shell reads of a queue as it goes, the creation
// and the restore of a checkpoint, a replay, the calls it holds.
func TestQueries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		// want: Constructing, Constructed, Replaying, then Holds of
		// each call the steps named, in their order.
		want string
	}{
		{"the creation queued", []step{
			{submit{"create", false}, nil},
		}, "constructing=true constructed=false replaying=false holds create=true"},
		{"the creation sent, a call queued behind it", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{waits{"a"}, nil},
			{submit{"a", true}, nil},
		}, "constructing=true constructed=false replaying=false holds create=true a=true"},
		{"the creation ran, a call in flight", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{returned{"create"}, []string{"ran create"}},
			{submit{"a", true}, []string{"send a"}},
		}, "constructing=false constructed=true replaying=false holds create=false a=true"},
		{"a restart: the creation ran, the restore in flight", []step{
			{requeue{[]string{"create", "again restore", "again a"}}, nil},
			{Pump{Up: true}, []string{"send create", "send again restore", "send again a"}},
			{returned{"create"}, []string{"ran create"}},
		}, "constructing=false constructed=false replaying=true holds create=false again restore=true again a=true"},
		{"a restart: the restore ran, a replayed call in flight", []step{
			{requeue{[]string{"create", "again restore", "again a"}}, nil},
			{Pump{Up: true}, []string{"send create", "send again restore", "send again a"}},
			{returned{"create"}, []string{"ran create"}},
			{returned{"again restore"}, []string{"ran again restore"}},
		}, "constructing=false constructed=true replaying=true holds create=false again restore=false again a=true"},
		{"killed: it holds nothing", []step{
			{submit{"create", false}, nil},
			{Pump{Up: true}, []string{"send create"}},
			{Kill{Why: died}, []string{
				"died: " + diedWhy + " (actor dead: true)",
				"fail create: " + dead("actor Counter %s is dead: "+diedWhy) + " (quiet)",
				"gone"}},
		}, "constructing=false constructed=true replaying=false holds create=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := run(t, tc.steps)
			got := fmt.Sprintf("constructing=%t constructed=%t replaying=%t holds", a.Constructing(), a.Constructed(), a.Replaying())
			w := &world{calls: map[string]*call{}}
			var seen []string
			for _, s := range tc.steps {
				for _, name := range named(s.ev) {
					if !slices.Contains(seen, name) {
						seen = append(seen, name)
						got += fmt.Sprintf(" %s=%t", name, a.Holds(w.get(name).spec.ID))
					}
				}
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// named returns the calls test event ev names, in order.
func named(ev Event) []string {
	switch e := ev.(type) {
	case waits:
		return []string{e.Name}
	case submit:
		return []string{e.Name}
	case requeue:
		return e.Names
	}
	return nil
}
