package worker

import "github.com/gray-ml/gray/runtime/task"

// The worker receives the large results of the task it runs.
var _ task.ResultSink = (*Worker)(nil)
