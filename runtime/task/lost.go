package task

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
)

// Lost objects: the runtime needs an object it can neither find nor
// rebuild. The error says which object and why, by one of the ErrLost
// reasons; each reason, and ErrObjectLost, keeps its identity between
// processes like every registered sentinel.

// ErrObjectLost is wrapped by the error of every object the runtime cannot
// rebuild, whatever the reason.
var ErrObjectLost = RegisterSentinel(errors.New("the object is lost and cannot be rebuilt"))

// lostReason is a reason an object is lost: a sentinel that is also
// ErrObjectLost.
type lostReason struct{ msg string }

func (r *lostReason) Error() string { return r.msg }

// Is makes every reason an ErrObjectLost as well.
func (r *lostReason) Is(target error) bool { return target == ErrObjectLost }

func newReason(msg string) error { return RegisterSentinel(&lostReason{msg: msg}) }

// The reasons an object is lost.
var (
	// ErrLostPut: it was made by Put, so no task can make it again.
	ErrLostPut = newReason("object lost: it was made by Put, which has no task to re-run")
	// ErrLostActorMethod: it was returned by an actor method, which cannot
	// be re-run on its own (it depends on the actor's state then).
	ErrLostActorMethod = newReason("object lost: it was returned by an actor method, which cannot be re-run on its own")
	// ErrLostOwnerDied: the process or node that held its only copy died,
	// and it cannot be rebuilt.
	ErrLostOwnerDied = newReason("object lost: the process that held its only copy died")
	// ErrLostRetriesExhausted: rebuilding it from its lineage failed too
	// many times in a row.
	ErrLostRetriesExhausted = newReason("object lost: rebuilding it failed too many times")
	// ErrLostLineageDropped: the record of the task that made it is gone.
	ErrLostLineageDropped = newReason("object lost: the record of the task that made it was dropped")
)

// ObjectLostError is the cause of the error of a lost object: which one,
// why (Reason, one of the ErrLost reasons), and what went wrong last
// (Cause: the eviction, the last rebuild's failure), with advice.
type ObjectLostError struct {
	Object ids.ObjectID
	Reason error
	Detail string
	Cause  error
}

// Error names the object and the reason.
func (e *ObjectLostError) Error() string {
	s := fmt.Sprintf("%s (object %s)", e.Reason, e.Object)
	if e.Detail != "" {
		s += "; " + e.Detail
	}
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// Unwrap returns the reason and the cause.
func (e *ObjectLostError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Cause}
}

// Lost returns the value of a lost object: an error with an
// ObjectLostError as its cause.
func Lost(id ids.ObjectID, reason error, detail string, cause error) *TaskError {
	le := &ObjectLostError{Object: id, Reason: reason, Detail: detail, Cause: cause}
	return &TaskError{Function: "(object store)", Message: le.Error(), Cause: le}
}
