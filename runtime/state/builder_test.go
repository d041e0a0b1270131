package state

import (
	"reflect"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// TestBuilder: a driver's records read in its snapshot as the dashboard
// and gray.Snapshot's users expect: a worker's first task runs and the
// others wait behind it, an actor is PENDING until it has a worker and
// DEAD once dead (its worker kept), its queued calls are queued tasks,
// and the workers come in the order of their IDs, whatever order the
// driver's map gave them in.
func TestBuilder(t *testing.T) {
	root := ids.Root(1, true)
	spec := func(i int) *task.Spec {
		return &task.Spec{ID: ids.Child(root, uint64(i)), Func: "f" + string(rune('0'+i))}
	}
	b := NewBuilder(func(s *task.Spec) *task.Spec { return s }, task.Resources{CPU: 4}, task.Resources{CPU: 1}, 1, 7)
	b.Worker(WorkerState{ID: 3, Name: "worker 3"}, []*task.Spec{spec(1), spec(2), spec(3)})
	b.Worker(WorkerState{ID: 1, Name: "worker 1"}, nil)
	b.Task(spec(4), TaskWaiting)
	a1, a2, a3 := ids.ActorID(ids.Child(root, 11)), ids.ActorID(ids.Child(root, 12)), ids.ActorID(ids.Child(root, 13))
	b.Actor(ActorState{ID: a1, Type: "A"}, false, -1, []*task.Spec{spec(5)}, 0)
	b.Actor(ActorState{ID: a2, Type: "A"}, false, 3, nil, 2)
	b.Actor(ActorState{ID: a3, Type: "A"}, true, 1, nil, 0)
	got := b.Snapshot()
	want := Snapshot{
		Total: task.Resources{CPU: 4}, Available: task.Resources{CPU: 1}, Starting: 1, Objects: 7,
		Workers: []WorkerState{{ID: 1, Name: "worker 1"}, {ID: 3, Name: "worker 3", Running: "f1", Queued: 2}},
		Tasks: []TaskState{
			{ID: spec(1).ID, Func: "f1", State: TaskRunning, Worker: 3},
			{ID: spec(2).ID, Func: "f2", State: TaskSent, Worker: 3},
			{ID: spec(3).ID, Func: "f3", State: TaskSent, Worker: 3},
			{ID: spec(4).ID, Func: "f4", State: TaskWaiting, Worker: -1},
			{ID: spec(5).ID, Func: "f5", State: TaskQueued, Worker: -1},
		},
		Actors: []ActorState{
			{ID: a1, Type: "A", State: "PENDING", Worker: -1, Pending: 1},
			{ID: a2, Type: "A", State: "ALIVE", Worker: 3, Pending: 2},
			{ID: a3, Type: "A", State: "DEAD", Worker: 1},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot:\n got  %+v\n want %+v", got, want)
	}
}
