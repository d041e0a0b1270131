package state

import (
	"sort"

	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// Builder fills a Snapshot from a driver's records, one at a time (the
// node's Snapshot feeds it under its lock), so that how a record reads in
// the snapshot is decided here, beside the types, and tested without a
// driver: which of a worker's tasks runs and which wait behind it, what
// an actor's state is called, the order of the rows. T is the driver's
// task; spec says what it runs.
type Builder[T any] struct {
	s    Snapshot
	spec func(T) *task.Spec
}

// NewBuilder starts a snapshot of a driver whose scheduler has total and
// available resources and starting pool workers not yet connected, and
// whose store holds objects objects.
func NewBuilder[T any](spec func(T) *task.Spec, total, available task.Resources, starting, objects int) *Builder[T] {
	return &Builder[T]{spec: spec, s: Snapshot{Total: total, Available: available, Starting: starting, Objects: objects}}
}

// Shared sets the statistics of the driver's shared-memory store.
func (b *Builder[T]) Shared(st objstore.Stats) { b.s.Shared = st }

// Worker adds worker w with the tasks sent to it, oldest first: the first
// runs, the others wait behind it. w's Running and Queued are set from
// them.
func (b *Builder[T]) Worker(w WorkerState, sent []T) {
	for i, t := range sent {
		s, st := b.spec(t), TaskSent
		if i == 0 {
			st, w.Running = TaskRunning, s.Func
		}
		b.s.Tasks = append(b.s.Tasks, TaskState{ID: s.ID, Func: s.Func, State: st, Worker: w.ID})
	}
	w.Queued = max(len(sent)-1, 0)
	b.s.Workers = append(b.s.Workers, w)
}

// Task adds task t, on no worker yet: TaskQueued (for resources) or
// TaskWaiting (for its arguments).
func (b *Builder[T]) Task(t T, state string) {
	s := b.spec(t)
	b.s.Tasks = append(b.s.Tasks, TaskState{ID: s.ID, Func: s.Func, State: state, Worker: -1})
}

// Actor adds actor a (its ID and Type set), dead or not, on worker
// worker (-1: none yet), with its calls queued (added as tasks) and
// inflight sent to its worker (added with the worker). Its State and
// Pending are set from them: DEAD, PENDING without a worker, else ALIVE.
func (b *Builder[T]) Actor(a ActorState, dead bool, worker int, queued []T, inflight int) {
	a.Worker, a.Pending = worker, len(queued)+inflight
	switch {
	case dead:
		a.State = "DEAD"
	case worker < 0:
		a.State = "PENDING"
	default:
		a.State = "ALIVE"
	}
	for _, t := range queued {
		b.Task(t, TaskQueued)
	}
	b.s.Actors = append(b.s.Actors, a)
}

// Snapshot returns the snapshot, its workers in the order of their IDs.
func (b *Builder[T]) Snapshot() Snapshot {
	sort.Slice(b.s.Workers, func(i, j int) bool { return b.s.Workers[i].ID < b.s.Workers[j].ID })
	return b.s
}
