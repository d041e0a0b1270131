package recovery

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/task"
)

// NoWorkers is why the driver's node starts no more workers, once the
// core said StopSpawning: Count of them in a row ended before connecting,
// the last as Last says. The usual cause is a program that does not serve
// tasks when started as a worker, so the message says what to call.
type NoWorkers struct {
	Count int
	Last  string
}

func (e *NoWorkers) Error() string {
	return fmt.Sprintf("gray: %d worker processes in a row exited before connecting to the driver (last: %s); "+
		"the program must call gray.ServeIfWorker() first thing in main (in TestMain for tests) so that it serves tasks when started as a worker", e.Count, e.Last)
}

// For is e as the failure of fn, which needed a worker: a task, an actor
// (by its type), or "(worker start)" for what waited for a worker to
// start.
func (e *NoWorkers) For(fn string) *task.TaskError {
	return &task.TaskError{Function: fn, Message: e.Error(), Cause: e}
}
