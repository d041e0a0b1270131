package state

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// A driver's own scheduler, which its node fills under its lock (the
// cluster's rows, state.go, are read from Redis instead).

// Snapshot is a driver's scheduler at one moment (the node's Snapshot,
// gray.Snapshot): its resources, workers, unfinished tasks and actors, for
// the dashboard and tests.
type Snapshot struct {
	Total, Available task.Resources
	Objects          int            // objects in the driver's store
	Shared           objstore.Stats // the shared-memory store (zero without one)
	Workers          []WorkerState
	Starting         int         // pool workers started and not yet connected
	Tasks            []TaskState // tasks queued for resources or sent to workers
	Actors           []ActorState
}

// WorkerState is one worker process.
type WorkerState struct {
	ID      int
	Name    string
	PID     int
	Actor   string // the actor type it hosts, "" for a pool worker
	Running string // the function it runs now, "" when idle
	Queued  int    // tasks sent to it behind the running one
}

// Task states in a Snapshot.
const (
	TaskQueued  = "QUEUED"  // waiting for a worker with the resources it needs
	TaskSent    = "SENT"    // sent to a worker, behind its running task
	TaskRunning = "RUNNING" // the first task a worker has
	TaskWaiting = "WAITING" // waiting for the objects it takes as arguments
)

// TaskState is one unfinished task.
type TaskState struct {
	ID     ids.TaskID
	Func   string
	State  string
	Worker int // -1 when not sent yet
}

// ActorState is one actor.
type ActorState struct {
	ID      ids.ActorID
	Type    string
	State   string // ALIVE, PENDING (no worker yet) or DEAD
	Worker  int    // -1 without one
	Pending int    // calls queued or in flight through the driver
	// DirectCallers: the actors that were given its address and call it
	// directly; their calls bypass the driver and are not in Pending.
	DirectCallers int
	// DirectAsking: the actors waiting for its address (until it is
	// constructed and listening); their calls wait in them, not in
	// Pending.
	DirectAsking int
}
