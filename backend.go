package gray

import (
	"context"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/local"
	"github.com/gray-ml/gray/runtime/node"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/worker"
)

// backend is everything the API needs from a runtime. Three implement it:
// the driver's node (runtime/node), a worker's connection to its driver
// (runtime/worker) and local mode (runtime/local). The API holds one in
// its session and calls nothing else: no method is optional.
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
	// Kill ends an actor now; Release ends it once no handle remains.
	Kill(id ids.ActorID) error
	Release(id ids.ActorID)

	// Put stores a small object (or an error) under id.
	Put(id ids.ObjectID, o task.Object) error
	// SharedDir is the shared-memory object store's directory; "" means
	// none, and PutEncoded is never called.
	SharedDir() string
	// PutEncoded stores a large object of size bytes, written by encode
	// straight into the store.
	PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error
	// Get waits for objects; Wait for num of them or the timeout.
	Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error)
	Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error)
	// Drop says this process no longer refers to an object; Free frees
	// objects at the program's request (gray.Free).
	Drop(id ids.ObjectID)
	Free(oids []ids.ObjectID) error
	// Hold says this process decoded a reference to id out of a value;
	// Contain says parent's value refers to children (refscan.go).
	Hold(id ids.ObjectID)
	Contain(parent ids.ObjectID, children []ids.ObjectID)
	// ReleaseShared ends an actor's hold on the kept object whose bytes
	// are data (Shared.Release), reporting whether it was one.
	ReleaseShared(data []byte) (bool, error)

	// Resources returns the runtime's capacity and what is free of it;
	// ok is false where the process keeps no accounts (a worker).
	Resources() (total, available task.Resources, ok bool)
	// Errors returns the task failures of the session.
	Errors() []*task.TaskError
	// Shutdown ends the session.
	Shutdown() error
}

var (
	_ backend = (*node.Node)(nil)
	_ backend = (*worker.Worker)(nil)
	_ backend = (*local.Local)(nil)
)

// where tells which backend a session has, for the few rules that differ.
type where uint8

const (
	inDriver where = iota // the driver, with a node and worker processes
	inWorker              // a worker process, serving its driver
	inLocal               // local mode: every task runs in the driver
)
