package gray

import (
	"context"
	"time"

	"github.com/gray-ml/gray/runtime/driver"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/local"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/worker"
)

// backend is what every runtime does for the API: the driver's
// (runtime/driver), a worker's connection to its driver (runtime/worker)
// and local mode (runtime/local). What only some of them do is in
// capabilities, given explicitly when the session is made.
type backend interface {
	// NewTaskID and NewPutID name the next task submitted and the next
	// object put from this process.
	NewTaskID() ids.TaskID
	NewPutID() ids.ObjectID
	// WorkerName names this process in error messages.
	WorkerName() string

	// Submit queues a task; problems found later become its returns'
	// values.
	Submit(s *task.Spec) error
	// Kill ends an actor now.
	Kill(id ids.ActorID) error

	// Put stores a small object (or an error) under id.
	Put(id ids.ObjectID, o task.Object) error
	// Get waits for objects; Wait for num of them or the timeout.
	Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error)
	Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error)
	// Drop says this process no longer refers to an object; Free frees
	// objects at the program's request (gray.Free).
	Drop(id ids.ObjectID)
	Free(oids []ids.ObjectID) error
}

// capabilities are what a session's backend does beyond the core. A nil
// field is one it lacks; the API's rule for that case is written where
// the field is used.
type capabilities struct {
	// store is the shared-memory object store (driver, worker); nil in
	// local mode, where every value stays inline.
	store sharedStore
	// nested tracks references encoded inside values (driver, worker);
	// nil in local mode, where an encoded reference keeps its object for
	// the session.
	nested nestedRefs
	// kept releases the objects an actor keeps as gray.Shared arguments
	// (a worker: only actors keep them).
	kept keptObjects
	// owner is the session's owner (driver, local mode); nil in a worker,
	// which cannot shut gray down and keeps no accounts.
	owner owner
	// insp shows the driver's runtime to tools (Inspect); nil elsewhere.
	insp Inspector
}

// sharedStore puts large values into the shared-memory object store.
type sharedStore interface {
	// SharedDir is the store's directory ("(inline)" for a worker on a
	// node without one: large values go inline).
	SharedDir() string
	// PutEncoded stores a large object of size bytes, written by encode
	// straight into the store.
	PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error
}

// nestedRefs tracks references inside values (refscan.go).
type nestedRefs interface {
	// Hold says this process decoded a reference to id out of a value.
	Hold(id ids.ObjectID)
	// Contain says parent's value refers to children.
	Contain(parent ids.ObjectID, children []ids.ObjectID)
}

// keptObjects ends an actor's hold on the kept object whose bytes are data
// (Shared.Release), reporting whether it was one.
type keptObjects interface {
	ReleaseShared(data []byte) (bool, error)
}

// owner is what the process that started the session does.
type owner interface {
	// Release ends an actor once no handle remains.
	Release(id ids.ActorID)
	// Resources returns the runtime's capacity and what is free of it.
	Resources() (total, available task.Resources)
	// Errors returns the task failures of the session.
	Errors() []*task.TaskError
	// Shutdown ends the session.
	Shutdown() error
}

// The three runtimes, with what each does.
func driverCaps(d *driver.Driver) capabilities {
	return capabilities{store: d, nested: d, owner: d, insp: d}
}

func workerCaps(w *worker.Worker) capabilities {
	return capabilities{store: w, nested: w, kept: w}
}

func localCaps(l *local.Local) capabilities { return capabilities{owner: l} }
