package node

import (
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// submitFrom sends what worker fw's call submits: MsgSubmit of s.
func (fw *fakeWorker) submitFrom(t *testing.T, s *task.Spec) {
	t.Helper()
	fw.send(t, task.MsgSubmit, func(b []byte) []byte { return task.AppendSpec(b, s) })
}

// An actor's call that created a child actor and submitted a task is
// replayed after the actor's node died: its second run submits both
// again, with the same IDs, and neither is made twice (no "exists
// already" failure, no second run of the task).
func TestReplayedCallDoesNotSubmitAgain(t *testing.T) {
	h, _ := newClusterHarness(t)
	ctrl := h.n.ctrl.(*control.Mem)
	if err := h.n.AddNode(1, "node 1", task.Resources{CPU: 1}); err != nil {
		t.Fatal(err)
	}
	parent, aw := h.createActor(t, nil)
	if err := h.n.AddNode(2, "node 2", task.Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	call := h.call(t, parent)
	if got := aw.exec(t); got.ID != call.ID {
		t.Fatalf("the actor got %s, want its call %s", got.ID, call.ID)
	}
	// What the call submits, with the IDs a worker derives from the call's.
	child := task.NewSpec(0)
	child.ID, child.Kind, child.Func, child.NumReturns = ids.Child(call.ID, 1), task.KindActorCreate, counterType, 1
	job := task.NewSpec(1)
	job.ID, job.Kind, job.Func, job.NumReturns = ids.Child(call.ID, 2), task.KindFunc, echoFunc, 1
	job.Args[0] = value("j")
	aw.submitFrom(t, child)
	cw := h.worker()
	if got := cw.exec(t); got.ID != child.ID {
		t.Fatalf("the child's worker got %s, want its constructor %s", got.ID, child.ID)
	}
	cw.result(t, child, "")
	// A call of the child whose result the parent's call dropped: its
	// replay must not call the child again.
	poke := task.NewSpec(0)
	poke.ID, poke.Kind, poke.Func, poke.NumReturns = ids.Child(call.ID, 3), task.KindActorMethod, counterInc, 1
	poke.SetActor(child.ID)
	aw.submitFrom(t, poke)
	if got := cw.exec(t); got.ID != poke.ID {
		t.Fatalf("the child got %s, want the call %s", got.ID, poke.ID)
	}
	cw.result(t, poke, "poked")
	if o := h.get(poke.Return(0)); string(o.Data) != "poked" {
		t.Fatalf("the child's call: %q (%v)", o.Data, o.Err)
	}
	aw.objects(t, task.MsgDrop, 0, poke.Return(0)) // freed: nothing else holds it
	aw.submitFrom(t, job)
	jw := h.worker()
	if got := jw.exec(t); got.ID != job.ID {
		t.Fatalf("node 2's worker got %s, want the call's task %s", got.ID, job.ID)
	}
	jw.result(t, job, "first")
	if o := h.get(job.Return(0)); string(o.Data) != "first" {
		t.Fatalf("the call's task: %q (%v)", o.Data, o.Err)
	}
	aw.result(t, call, "c")
	h.get(call.Return(0))
	submitted, _ := ctrl.Tasks()

	if err := h.n.AddNode(3, "node 3", task.Resources{CPU: 1}); err != nil {
		t.Fatal(err)
	}
	h.n.NodeGone(1, "killed by the test")
	h.check("the parent's node died")
	aw2 := h.worker()
	if got := aw2.exec(t); got.ID != parent.ID {
		t.Fatalf("the recreated parent got %s, want its constructor %s", got.ID, parent.ID)
	}
	aw2.result(t, parent, "")
	if got := aw2.exec(t); got.ID != call.ID {
		t.Fatalf("the recreated parent got %s, want its call %s replayed", got.ID, call.ID)
	}
	aw2.submitFrom(t, child)
	aw2.submitFrom(t, poke)
	aw2.submitFrom(t, job)
	aw2.result(t, call, "c again")
	// A new call: once it is answered, the replay's submissions were
	// handled (one connection, in order).
	next := h.call(t, parent)
	if got := aw2.exec(t); got.ID != next.ID {
		t.Fatalf("the recreated parent got %s, want the new call %s", got.ID, next.ID)
	}
	aw2.result(t, next, "n")
	if o := h.get(next.Return(0)); string(o.Data) != "n" {
		t.Fatalf("the new call: %q (%v)", o.Data, o.Err)
	}
	if o := h.get(poke.Return(0)); !errors.Is(o.Err, task.ErrLostActorMethod) {
		t.Fatalf("the replayed call's call of the child, whose result was freed: %q (%v), want ErrLostActorMethod", o.Data, o.Err)
	}
	direct := h.call(t, child)
	if got := cw.exec(t); got.ID != direct.ID {
		t.Fatalf("the child got %s, want the driver's call %s: the replayed call called it again", got.ID, direct.ID)
	}
	cw.result(t, direct, "d")
	if errs := ctrl.Errors(); len(errs) != 0 {
		t.Fatalf("the replay failed: %v", errs[0])
	}
	if now, _ := ctrl.Tasks(); now != submitted+2 { // the new calls of parent and child (a replay submits nothing)
		t.Fatalf("%d tasks submitted since the replay began, want 2: what the replayed call submitted was submitted again", now-submitted)
	}
	if o := h.get(job.Return(0)); string(o.Data) != "first" {
		t.Fatalf("the call's task after the replay: %q (%v), want the first result", o.Data, o.Err)
	}
	h.check("the replay")
}
