package control

import (
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Mem counts task submissions and ends without keeping the tasks, and
// keeps actors and errors for the session.
func TestMemCountsTasksAndKeepsActors(t *testing.T) {
	m := NewMem()
	root := ids.Root(1, true)
	for i := range 3 {
		m.TaskSubmitted(&task.Spec{ID: ids.Child(root, uint64(i)), Func: "f"})
	}
	m.TaskFinished(ids.Child(root, 0), nil)
	m.TaskFinished(ids.Child(root, 1), &task.TaskError{Function: "f", Message: "boom"})
	if sub, fin := m.Tasks(); sub != 3 || fin != 2 {
		t.Fatalf("Tasks = %d submitted, %d finished; want 3 and 2", sub, fin)
	}
	a := ids.Child(root, 9)
	m.ActorCreated(a, "Counter", "")
	m.ActorPlaced(a, "worker 1")
	m.ActorDied(a, "killed")
	if rec, ok := m.Actor(a); !ok || rec != (ActorRecord{Type: "Counter", Worker: "worker 1", Death: "killed"}) {
		t.Fatalf("Actor = %+v, %v", rec, ok)
	}
	if _, ok := m.Actor(ids.Child(root, 10)); ok {
		t.Fatal("an unknown actor was found")
	}
	m.AddError(&task.TaskError{Function: "f", Message: "boom"})
	if errs := m.Errors(); len(errs) != 1 || errs[0].Message != "boom" {
		t.Fatalf("Errors = %v", errs)
	}
}
