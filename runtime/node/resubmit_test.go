package node

import (
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
	parent, aw := h.createActor(t)
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
	if errs := ctrl.Errors(); len(errs) != 0 {
		t.Fatalf("the replay failed: %v", errs[0])
	}
	if now, _ := ctrl.Tasks(); now != submitted+1 { // the new call (a replay submits nothing)
		t.Fatalf("%d tasks submitted since the replay began, want 1: what the replayed call submitted was submitted again", now-submitted)
	}
	if o := h.get(job.Return(0)); string(o.Data) != "first" {
		t.Fatalf("the call's task after the replay: %q (%v), want the first result", o.Data, o.Err)
	}
	h.check("the replay")
}
