package node

import (
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// The actor type the tests create, and its one method; the fake worker
// answers for both.
const (
	counterType = "nodetest.Counter"
	counterInc  = "nodetest.Counter.Inc"
)

func init() {
	task.Register(&task.Entry{Name: counterType, Kind: task.KindActorCreate, NumReturns: 1, Res: task.Resources{CPU: 1}})
	task.Register(&task.Entry{Name: counterInc, Kind: task.KindActorMethod, NumReturns: 1})
}

// createActor submits a Counter and returns its creation spec and the
// worker that hosts it, after the worker ran the constructor: idle, the
// started pool worker taken for it (sched's reuse.go), or nil when none
// is idle on the actor's node, so the next worker to connect.
func (h *harness) createActor(t *testing.T, idle *fakeWorker) (*task.Spec, *fakeWorker) {
	t.Helper()
	s := task.NewSpec(0)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindActorCreate, counterType, 1
	if err := h.n.Submit(s); err != nil {
		t.Fatalf("creating the actor: %v", err)
	}
	h.check("create")
	aw := idle
	if aw == nil {
		aw = h.worker()
	}
	if got := aw.exec(t); got.ID != s.ID || got.Kind != task.KindActorCreate {
		t.Fatalf("the actor's worker got task %s of kind %d first, want its constructor %s", got.ID, got.Kind, s.ID)
	}
	aw.result(t, s, "")
	return s, aw
}

// call submits a method call of actor a.
func (h *harness) call(t *testing.T, a *task.Spec) *task.Spec {
	t.Helper()
	s := task.NewSpec(0)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindActorMethod, counterInc, 1
	s.SetActor(a.ID)
	if err := h.n.Submit(s); err != nil {
		t.Fatalf("calling the actor: %v", err)
	}
	h.check("call")
	return s
}

// TestActors steps an actor through the shell: its calls go to its own
// worker in order, and its death fails its calls with ErrActorDead.
func TestActors(t *testing.T) {
	// dead asserts that call s failed with every sentinel in want.
	dead := func(t *testing.T, h *harness, s *task.Spec, want ...error) {
		t.Helper()
		o := h.get(s.Return(0))
		for _, w := range want {
			if !errors.Is(o.Err, w) {
				t.Fatalf("call %s = %q, %v; want an error that is %v", s.ID, o.Data, o.Err, w)
			}
		}
	}
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness, a *task.Spec, aw *fakeWorker)
	}{
		{"calls run on the actor's worker in order", func(t *testing.T, h *harness, a *task.Spec, aw *fakeWorker) {
			calls := []*task.Spec{h.call(t, a), h.call(t, a), h.call(t, a)}
			for i, c := range calls {
				got := aw.exec(t)
				if got.ID != c.ID {
					t.Fatalf("call %d: the worker got %s, want %s", i, got.ID, c.ID)
				}
				aw.result(t, got, string(rune('a'+i)))
			}
			for i, c := range calls {
				if o := h.get(c.Return(0)); string(o.Data) != string(rune('a'+i)) {
					t.Fatalf("call %d = %q, %v; want %q", i, o.Data, o.Err, string(rune('a'+i)))
				}
			}
		}},
		{"its worker's death fails the running and later calls with ErrActorDead and ErrWorkerDied", func(t *testing.T, h *harness, a *task.Spec, aw *fakeWorker) {
			running := h.call(t, a)
			aw.exec(t)
			aw.die()
			dead(t, h, running, task.ErrActorDead, task.ErrWorkerDied)
			dead(t, h, h.call(t, a), task.ErrActorDead, task.ErrWorkerDied)
			if rec, ok := h.n.Actor(a.ID); !ok || rec.Death == "" {
				t.Fatalf("the control store records no death: %+v, %v", rec, ok)
			}
		}},
		{"Kill fails its calls with ErrActorDead and tells its worker to exit", func(t *testing.T, h *harness, a *task.Spec, aw *fakeWorker) {
			running := h.call(t, a)
			aw.exec(t)
			if err := h.n.Kill(a.ID); err != nil {
				t.Fatal(err)
			}
			h.check("kill")
			aw.expect(t, task.MsgExit)
			aw.die()
			dead(t, h, running, task.ErrActorDead)
			dead(t, h, h.call(t, a), task.ErrActorDead)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 1, 1)
			// The pool's idle worker hosts the actor; a new one replaces
			// it in the pool.
			a, aw := h.createActor(t, h.worker())
			if pw := h.worker(); pw.id == aw.id {
				t.Fatalf("worker %d connected twice", pw.id)
			}
			tt.run(t, h, a, aw)
			h.check("the end")
		})
	}
}
