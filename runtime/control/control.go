// Package control is the control store: the task and actor tables and the
// error log (Store), and a cluster's shared tables in Redis (Redis: nodes
// and heartbeats, jobs, object locations, and each job's task, actor and
// error-log tables).
//
// On one machine the node keeps its Store in the driver's memory (Mem).
// A cluster driver's node is given a Recorder: a Store answered from
// memory that also records every task, actor and failure in the job's
// Redis tables, through a bounded buffer and one writer goroutine, for
// the state API (runtime/state, `gray list`).
package control

import (
	"sync"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Store holds the state a cluster shares: task and actor tables and the
// error log.
type Store interface {
	// TaskSubmitted records a task specification.
	TaskSubmitted(s *task.Spec)
	// TaskFinished records that a task ended; failed tasks carry their error.
	TaskFinished(id ids.TaskID, err *task.TaskError)
	// ActorCreated records an actor when its creation is submitted.
	ActorCreated(id ids.ActorID, typ string, worker string)
	// ActorPlaced records the worker that hosts an actor once it started.
	ActorPlaced(id ids.ActorID, worker string)
	// Actor returns what the store knows of an actor: the node reads the
	// actor table from here to route and refuse calls.
	Actor(id ids.ActorID) (ActorRecord, bool)
	// ActorDied records that an actor is gone and why.
	ActorDied(id ids.ActorID, reason string)
	// AddError appends a task failure to the error log.
	AddError(err *task.TaskError)
	// Errors returns the error log.
	Errors() []*task.TaskError
}

// ActorRecord is what the control store keeps about an actor: its type,
// the worker that hosts it ("" while it starts) and why it died ("" while
// it lives).
type ActorRecord struct {
	Type, Worker, Death string
}

// Mem is the in-process Store for one machine. It keeps no record per
// task: the node holds its tasks itself while they are queued or run, so
// the store only counts submissions and ends (a queued task costs it
// nothing). Actors and errors are kept for the session.
type Mem struct {
	mu        sync.Mutex
	submitted uint64
	finished  uint64
	actors    map[ids.ActorID]*ActorRecord
	errs      []*task.TaskError
}

// NewMem returns an empty store.
func NewMem() *Mem {
	return &Mem{actors: map[ids.ActorID]*ActorRecord{}}
}

// TaskSubmitted implements Store.
func (m *Mem) TaskSubmitted(*task.Spec) {
	m.mu.Lock()
	m.submitted++
	m.mu.Unlock()
}

// TaskFinished implements Store.
func (m *Mem) TaskFinished(ids.TaskID, *task.TaskError) {
	m.mu.Lock()
	m.finished++
	m.mu.Unlock()
}

// ActorCreated implements Store.
func (m *Mem) ActorCreated(id ids.ActorID, typ, worker string) {
	m.mu.Lock()
	m.actors[id] = &ActorRecord{Type: typ, Worker: worker}
	m.mu.Unlock()
}

// ActorPlaced implements Store.
func (m *Mem) ActorPlaced(id ids.ActorID, worker string) {
	m.mu.Lock()
	if a := m.actors[id]; a != nil {
		a.Worker = worker
	}
	m.mu.Unlock()
}

// Actor implements Store.
func (m *Mem) Actor(id ids.ActorID) (ActorRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.actors[id]; a != nil {
		return *a, true
	}
	return ActorRecord{}, false
}

// ActorDied implements Store.
func (m *Mem) ActorDied(id ids.ActorID, reason string) {
	m.mu.Lock()
	if a := m.actors[id]; a != nil {
		a.Death = reason
	}
	m.mu.Unlock()
}

// AddError implements Store.
func (m *Mem) AddError(err *task.TaskError) {
	m.mu.Lock()
	m.errs = append(m.errs, err)
	m.mu.Unlock()
}

// Errors implements Store.
func (m *Mem) Errors() []*task.TaskError {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*task.TaskError(nil), m.errs...)
}

// Tasks returns how many task submissions and task ends were recorded. A
// task that ends more than once (rebuilt from its lineage, say) counts each
// time, so finished can pass submitted.
func (m *Mem) Tasks() (submitted, finished uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.submitted, m.finished
}
