package transfer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// ErrPull is wrapped by the error of a worker that could not pull an
// object it needed from the node holding it (the node died, or dropped the
// object). It keeps its identity between processes, so the driver can
// tell such a failure from the task's own and run the task again once the
// object is rebuilt.
var ErrPull = task.RegisterSentinel(errors.New("gray: pulling an object from another node failed"))

const pullFunc = "(pull "

// PullError is the error of a failed pull of object id from addr, as a
// worker reports it (the cause of its task's error).
func PullError(id ids.ObjectID, addr string, err error) *task.TaskError {
	return &task.TaskError{
		Function: pullFunc + id.String() + ")",
		Message:  fmt.Sprintf("pulling object %s from %s: %v", id, addr, err),
		Cause:    fmt.Errorf("%w: %w", ErrPull, err),
	}
}

// FailedPull reports whether e, or one of the task errors it wraps, is a
// PullError, and of which object.
func FailedPull(e *task.TaskError) (ids.ObjectID, bool) {
	for depth := 0; e != nil && depth < 64; depth++ {
		if h, ok := strings.CutPrefix(e.Function, pullFunc); ok {
			var id ids.ObjectID
			b, err := hex.DecodeString(strings.TrimSuffix(h, ")"))
			if err == nil && len(b) == len(id) {
				copy(id[:], b)
				return id, true
			}
		}
		var next *task.TaskError
		if !errors.As(e.Cause, &next) {
			break
		}
		e = next
	}
	return ids.ObjectID{}, false
}
