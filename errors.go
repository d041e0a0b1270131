package gray

import (
	"context"
	"errors"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// ErrNotInitialized is returned when gray is used before Init or after
// Shutdown.
var ErrNotInitialized = RegisterError(errors.New("gray is not initialised: call gray.Init first (and do not use references after gray.Shutdown)"))

// TaskError is the error every reference of a failed task holds: it names
// the function and the worker and carries the remote stack of a panic.
type TaskError = task.TaskError

// ErrWorkerDied is the cause of a task's error when its worker process died
// (os.Exit, a signal, a crash) while running it. A call to an actor whose
// process died wraps it too, beside ErrActorDead.
var ErrWorkerDied = task.ErrWorkerDied

// ErrActorDead is the cause of a method call's error when its actor is
// dead, for whatever reason: it was killed, its last handle was dropped,
// its constructor failed, or its process died and it could not be
// restarted (its type allows no restarts, the default, or MaxRestarts
// were used up, which the message says). Checking it alone is enough.
var ErrActorDead = task.ErrActorDead

// ErrFreed is the cause of the error Get, Wait and task submission return
// for a reference whose object was released with Free.
var ErrFreed = task.ErrFreed

// ErrObjectLost is wrapped by the error of every object the runtime needs
// but can neither find nor rebuild. The error also wraps one of the ErrLost
// reasons below, which says why, and its cause is an *ObjectLostError
// naming the object (errors.As, in the process that found it lost). Both
// keep their identity across processes: a task that Gets a lost object
// fails with an error for which errors.Is(err, ErrObjectLost) and the
// reason hold in the driver.
var ErrObjectLost = task.ErrObjectLost

// The reasons an object is lost; each is also ErrObjectLost.
var (
	// ErrLostPut: the object was made by Put and then evicted from the
	// object store; no task can make it again (section 1.23.4 of Ray 0.2's
	// documentation).
	ErrLostPut = task.ErrLostPut
	// ErrLostActorMethod: the object was returned by an actor method and
	// then evicted; a method cannot be re-run on its own.
	ErrLostActorMethod = task.ErrLostActorMethod
	// ErrLostOwnerDied: the process or node that held the only copy died
	// and the object cannot be rebuilt. On one machine objects live in the
	// driver, so this comes from a cluster.
	ErrLostOwnerDied = task.ErrLostOwnerDied
	// ErrLostRetriesExhausted: rebuilding the object from its lineage (the
	// task that made it, re-run) failed recovery.DefaultRebuilds times in a row.
	// Rebuilds that failed for want of room in the store do not count.
	ErrLostRetriesExhausted = task.ErrLostRetriesExhausted
	// ErrLostLineageDropped: the record of the task that made the object is
	// gone. One machine keeps lineage as long as the object exists; a
	// cluster may drop it.
	ErrLostLineageDropped = task.ErrLostLineageDropped
)

// ObjectLostError says which object is lost (Object), why (Reason, one of
// the ErrLost reasons) and what failed last (Cause: the eviction, the last
// rebuild's error). It is the cause of a lost object's *TaskError in the
// process that found it lost; other processes see its text and sentinels.
type ObjectLostError = task.ObjectLostError

// RegisterError makes the sentinel error err keep its identity between
// processes, and returns it.
//
// A task's error is made in a worker and read in the driver (or in the
// worker of a task that called it), so it crosses a process boundary as
// text. What survives the trip:
//
//   - the *TaskError itself (errors.As), with its function, worker, message
//     and remote stack, and the *TaskError of a failed argument or nested
//     call it wraps;
//   - every registered sentinel error the original wrapped: errors.Is holds
//     in the receiving process as it did where the error was made.
//
// Registered are every exported sentinel of gray and of its runtime
// packages (ErrNotInitialized, ErrWorkerDied, ErrActorDead, ErrFreed,
// ErrObjectLost and its ErrLost reasons, the
// objstore errors such as objstore.ErrReadOnly and objstore.ErrTooLarge,
// codec.ErrCorrupt, the runtime's ErrShutdown), and context.Canceled and
// context.DeadlineExceeded. Any other error in the chain keeps only its
// text: errors.As to a custom error type, or errors.Is to an unregistered
// value, is false on the other side. A program registers its own sentinels
// at package level:
//
//	var ErrBudget = gray.RegisterError(errors.New("rollout: budget exceeded"))
//
// A task that fails with an error wrapping ErrBudget then gives the driver
// an error for which errors.Is(err, ErrBudget) is true. Register at package
// level, so the driver and every worker (the same executable) know it.
// Sentinels travel by message: registering the same error twice is fine,
// and registering a different error with a message already registered
// panics, as does nil.
func RegisterError(err error) error { return task.RegisterSentinel(err) }

func init() {
	for _, err := range []error{
		context.Canceled, context.DeadlineExceeded,
		objstore.ErrNotFound, objstore.ErrEvicted, objstore.ErrNotSealed, objstore.ErrExists,
		objstore.ErrTooLarge, objstore.ErrFull, objstore.ErrClosed, objstore.ErrBadID, objstore.ErrReadOnly,
		codec.ErrCorrupt,
	} {
		RegisterError(err)
	}
}
