package worker

import "github.com/gray-ml/gray/runtime/task"

// Resources reports nothing: the driver keeps the node's accounts.
func (w *Worker) Resources() (total, available task.Resources, ok bool) {
	return task.Resources{}, task.Resources{}, false
}

// The worker receives the large results of the task it runs.
var _ task.ResultSink = (*Worker)(nil)
