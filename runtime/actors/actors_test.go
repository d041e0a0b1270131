package actors

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/task"
)

// The tests play the node with a host that writes down each action the
// Driver asks of it, one a line, and compare those lines: which actor
// tasks are refused, when a creation and its calls go out, what a killed
// or released actor's calls get, the order an actor is freed in, what a
// restart queues and asks for, a failed constructor or checkpoint, the
// actors ended with their creator, and what the actor table says. No
// process is involved.

var root = ids.Root(1, true)

// call is the node's record of an actor's task in the tests.
type call struct {
	name  string
	spec  *task.Spec
	again bool
}

func (c *call) Spec() *task.Spec { return c.spec }
func (c *call) Again() bool      { return c.again }
func (c *call) Kind() task.Kind  { return c.spec.Kind }

// actor is the node's record of an actor in the tests.
type actor struct {
	name string
	up   bool // its worker is connected
	actorq.Actor[*call]
}

// host is the node in the tests: the log of what the Driver asked of
// it, and whether it reports failures now (Quietly).
type host struct {
	d        *Driver[*call, *actor]
	table    *control.Mem
	log      []string
	n        uint64
	quiet    bool
	stopping bool
}

func (h *host) say(format string, args ...any) { h.log = append(h.log, fmt.Sprintf(format, args...)) }

func (h *host) New(s *task.Spec, _ *task.Entry) *actor {
	return &actor{name: s.Func, Actor: actorq.New(s.ID, s.Func, func(*call) (bool, *task.TaskError) { return false, nil })}
}
func (h *host) Up(a *actor) bool       { return a.up }
func (h *host) Wait(a *actor)          { h.say("wait %s", a.name) }
func (h *host) Send(a *actor, c *call) { h.say("send %s %s", a.name, c.name) }
func (h *host) Fail(c *call, err *task.TaskError) {
	h.say("fail %s quiet=%t: %s", c.name, h.quiet, err.Message)
}
func (h *host) Quietly(f func()) {
	was := h.quiet
	h.quiet = true
	f()
	h.quiet = was
}
func (h *host) Stopping() bool                     { return h.stopping }
func (h *host) ArgFailed(c *call)                  { h.say("arg-failed %s", c.name) }
func (h *host) Unsent(c *call)                     { h.say("unsent %s", c.name) }
func (h *host) Died(a *actor, err *task.TaskError) { h.say("died %s: %s", a.name, err.Message) }
func (h *host) Free(a *actor)                      { h.say("free %s", a.name) }
func (h *host) Stop(a *actor)                      { h.say("stop %s", a.name) }
func (h *host) Lineage(s *task.Spec, claim bool)   { h.say("lineage %s claim=%t", s.Func, claim) }
func (h *host) Unplace(a *actor)                   { h.say("unplace %s", a.name) }
func (h *host) Place(a *actor)                     { h.say("place %s", a.name) }
func (h *host) Replay(a *actor, s *task.Spec, discard bool) *call {
	h.say("replay %s discard=%t", s.Func, discard)
	return &call{name: "again " + s.Func, spec: s, again: true}
}

// objects is the objects' keeper in the tests: it writes to h's log.
type objects struct{ h *host }

func (o objects) ClaimLineage(s *task.Spec)   { o.h.say("lineage %s claim=true", s.Func) }
func (o objects) ReleaseLineage(s *task.Spec) { o.h.say("lineage %s claim=false", s.Func) }
func (o objects) Unsent(s *task.Spec)         { o.h.say("unsent %s", s.Func) }
func (o objects) ReleaseKept(a ids.ActorID)   { o.h.say("release-kept %s", o.h.d.Actor(a).name) }

func (h *host) Worker(a *actor) (string, bool) { return "worker-" + a.name, a.up }
func (h *host) Report(e *task.TaskError)       { h.say("report %s: %s", e.Function, e.Message) }

// create makes actor name of a type allowing max restarts (noRestarts:
// none, and its children end with it), its creation task submitted.
func (h *host) create(name string, max int, noRestarts bool) *actor {
	h.n++
	s := &task.Spec{ID: ids.Child(root, h.n), Kind: task.KindActorCreate, Func: name}
	if err := h.d.Check(s); err != nil {
		h.say("refused: %v", err)
		return nil
	}
	a := h.d.Create(s, &task.Entry{MaxRestarts: max, NoRestarts: noRestarts})
	h.d.Submit(a, &call{name: name + ".create", spec: s})
	return a
}

// call submits method m on a, sent at once when a's worker is up.
func (h *host) call(a *actor, m string) *call {
	h.n++
	s := &task.Spec{ID: ids.Child(root, h.n), Kind: task.KindActorMethod, Func: a.name + "." + m, NumReturns: 1}
	s.SetActor(a.ID())
	c := &call{name: a.name + "." + m, spec: s}
	if err := h.d.Check(s); err != nil {
		h.say("refused: %v", err)
		return c
	}
	h.d.Submit(a, c)
	return c
}

// connect connects a's worker: its queue goes out, and its constructor
// returns.
func (h *host) connect(a *actor) {
	a.up = true
	h.d.Placed(a, "worker-"+a.name)
	if in := a.Inflight(); len(in) > 0 && in[0].Kind() == task.KindActorCreate {
		h.d.Returned(a, in[0].spec.ID)
	}
}

// record writes down what the actor table says of a.
func (h *host) record(a *actor) {
	r, _ := h.table.Actor(a.ID())
	h.say("table %s: worker %q, death %q", a.name, r.Worker, r.Death)
}

// badStore is a checkpoint store that cannot save.
type badStore struct{ control.Checkpoints }

func (badStore) SaveCheckpoint(ids.ActorID, []byte) error { return errors.New("disk full") }

var died = &task.TaskError{Function: "A", Message: "its worker process died", Cause: task.ErrWorkerDied}

func TestDriver(t *testing.T) {
	cases := []struct {
		name  string
		store control.Checkpoints
		play  func(h *host)
		want  []string
	}{{
		name: "a killed actor's calls fail quietly, then it is freed before its process stops",
		play: func(h *host) {
			a := h.create("A", 0, false)
			h.connect(a)
			h.call(a, "f")
			h.log = nil
			if err := h.d.Kill(a.ID()); err != nil {
				h.say("kill: %v", err)
			}
		},
		want: []string{
			"died A: it was killed",
			"fail A.f quiet=true: actor A ",
			"release-kept A",
			"free A",
			"stop A",
		},
	}, {
		name: "a creation waits for a worker; the calls queued meanwhile go out behind it once it connects",
		play: func(h *host) {
			a := h.create("A", 0, false)
			h.call(a, "f")
			h.record(a)
			a.up = true
			h.d.Placed(a, "worker-A")
			h.record(a)
			h.call(a, "g")
		},
		want: []string{
			"wait A",
			`table A: worker "", death ""`,
			"send A A.create",
			"send A A.f",
			`table A: worker "worker-A", death ""`,
			"send A A.g",
		},
	}, {
		name: "an actor created twice, or called where the node does not have it, is refused",
		play: func(h *host) {
			a := h.create("A", 0, false)
			h.log = nil
			h.say("%v", h.d.Check(&task.Spec{ID: a.ID(), Kind: task.KindActorCreate, Func: "A"}))
			// Another node of the cluster created B: the table lists it.
			b := &actor{name: "B", Actor: actorq.New[*call](ids.Child(root, 100), "B", nil)}
			h.table.ActorCreated(b.ID(), "B", "")
			h.call(b, "f")
			h.call(&actor{name: "C", Actor: actorq.New[*call](ids.Child(root, 101), "C", nil)}, "f")
			if err := h.d.Kill(ids.Child(root, 101)); err != nil {
				h.say("%v", err)
			}
			h.d.Release(ids.Child(root, 101)) // nothing
		},
		want: []string{
			"actor " + ids.Child(root, 1).String() + " exists already",
			"refused: calling B.f: actor " + ids.Child(root, 100).String() + " lives on another node",
			"refused: calling C.f: actor " + ids.Child(root, 101).String() + " is unknown in this session",
			"gray: kill: actor " + ids.Child(root, 101).String() + " is unknown in this session",
		},
	}, {
		name: "released, an actor ends after its last call; a call made since fails at once",
		play: func(h *host) {
			a := h.create("A", 0, false)
			h.connect(a)
			f := h.call(a, "f")
			h.log = nil
			h.d.Release(a.ID())
			h.call(a, "g")
			h.d.Returned(a, f.spec.ID)
			h.d.Ran(a, f)
			h.d.Step(a, actorq.Finished{})
			h.record(a)
		},
		want: []string{
			"fail A.g quiet=false: actor A ",
			"died A: no handle to the actor remains",
			"release-kept A",
			"free A",
			"stop A",
			`table A: worker "worker-A", death "no handle to the actor remains"`,
		},
	}, {
		name: "an actor whose process dies while the node stops is not restarted",
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.connect(a)
			h.call(a, "f")
			h.log = nil
			h.stopping = true
			h.d.Lost(a, died, false)
		},
		want: []string{
			"died A: its worker process died",
			"fail A.f quiet=false: actor A ",
			"release-kept A",
			"free A",
			"lineage A claim=false",
			"lineage A.f claim=false",
			"stop A",
		},
	}, {
		name: "a constructor that failed ends the actor, naming the first line of its error; its calls fail",
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.call(a, "f")
			a.up = true
			h.d.Placed(a, "worker-A")
			c := a.Inflight()[0]
			h.d.Returned(a, c.spec.ID)
			h.d.Ran(a, c)
			h.log = nil
			h.d.Finished(a, c, "worker-A", &task.TaskError{Function: "A", Message: "bad config\nat line 3"})
		},
		want: []string{
			"died A: its constructor failed: bad config",
			"fail A.f quiet=false: actor A ",
			"release-kept A",
			"free A",
			"lineage A claim=false",
			"lineage A.f claim=false",
			"stop A",
		},
	}, {
		name: "a restart lets go of the process, queues the creation and the replay, then asks for a worker",
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.connect(a)
			f := h.call(a, "f")
			if c, ok := h.d.Returned(a, f.spec.ID); !ok || c != f {
				h.say("returned %v %t", c, ok)
			}
			h.d.Ran(a, f)
			h.call(a, "g")
			h.log = nil
			a.up = false
			h.d.Lost(a, died, false)
		},
		want: []string{
			"release-kept A",
			"unplace A",
			"replay A discard=false",
			"replay A.f discard=true",
			"replay A.g discard=false",
			"place A",
		},
	}, {
		name: "an actor past its restarts ends: its calls fail and its log's claims end",
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.connect(a)
			h.call(a, "f")
			h.d.Lost(a, died, false)
			h.connect(a)
			h.log = nil
			h.d.Lost(a, died, false)
		},
		want: []string{
			"died A: its worker process died; it was restarted once",
			"fail again A.f quiet=false: actor A ",
			"release-kept A",
			"free A",
			"lineage A claim=false",
			"lineage A.f claim=false",
			"stop A",
		},
	}, {
		name: "a failed checkpoint is reported with the actor and call, and nothing else changes",
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.connect(a)
			h.log = nil
			h.d.Checkpoint(a, "worker-A", ids.Child(root, 9), nil, false, "cannot encode")
		},
		want: []string{"report A.Checkpoint: checkpointing actor "},
	}, {
		name:  "a checkpoint the store cannot save is reported",
		store: badStore{},
		play: func(h *host) {
			a := h.create("A", 1, false)
			h.connect(a)
			f := h.call(a, "f")
			h.d.Returned(a, f.spec.ID)
			h.d.Ran(a, f)
			h.log = nil
			h.d.Checkpoint(a, "worker-A", f.spec.ID, []byte("state"), true, "")
		},
		want: []string{"report A.Checkpoint: checkpointing actor "},
	}, {
		name: "the actors a NoRestarts actor created end with it",
		play: func(h *host) {
			p := h.create("P", 0, true)
			h.connect(p)
			c := h.create("C", 0, false)
			h.d.Restart(restart.Adopted{Parent: p.ID(), Child: c.ID()})
			h.connect(c)
			h.call(c, "f")
			h.log = nil
			h.d.End(p, died)
		},
		want: []string{
			"died P: its worker process died",
			"release-kept P",
			"free P",
			"died C: the actor that created it (P) ended",
			"fail C.f quiet=true: actor C ",
			"release-kept C",
			"free C",
			"stop C",
			"stop P",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store
			if store == nil {
				store = control.NewMemCheckpoints()
			}
			h := &host{table: control.NewMem()}
			h.d = New[*call, *actor](h, objects{h}, h.table, restart.New(restart.Config{}), store)
			tc.play(h)
			// A line of want may stop short: the rest of the message
			// (IDs, counts) is the cores' to word.
			ok := len(h.log) == len(tc.want)
			for i := 0; ok && i < len(tc.want); i++ {
				ok = strings.HasPrefix(h.log[i], tc.want[i])
			}
			if !ok {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(h.log, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

func init() {
	task.Register(&task.Entry{Name: "actors.Plain", Kind: task.KindActorCreate})
	task.Register(&task.Entry{Name: "actors.Checkpointed", Kind: task.KindActorCreate, CheckpointInterval: 10})
}

// TestDirect: which actors' calls may bypass the driver.
func TestDirect(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(h *host) *actor
		want bool
	}{
		{"a live actor of a plain type", func(h *host) *actor { return h.create("actors.Plain", 0, false) }, true},
		{"a released one", func(h *host) *actor {
			a := h.create("actors.Plain", 0, false)
			h.call(a, "f")
			h.d.Release(a.ID())
			return a
		}, false},
		{"a dead one", func(h *host) *actor {
			a := h.create("actors.Plain", 0, false)
			h.d.End(a, died)
			return a
		}, false},
		{"one that may be restarted: its calls are logged here", func(h *host) *actor { return h.create("actors.Plain", 1, false) }, false},
		{"one whose type checkpoints", func(h *host) *actor { return h.create("actors.Checkpointed", 0, false) }, false},
		{"one whose type is not registered in this process", func(h *host) *actor { return h.create("actors.Unknown", 0, false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{table: control.NewMem()}
			h.d = New[*call, *actor](h, objects{h}, h.table, restart.New(restart.Config{}), control.NewMemCheckpoints())
			if got := h.d.Direct(tc.make(h)); got != tc.want {
				t.Errorf("Direct = %t, want %t", got, tc.want)
			}
		})
	}
}
