package driver

import (
	"context"
	"os"

	"github.com/gray-ml/gray/runtime/control"
)

// EnvTaskTable, set to "off", keeps a cluster driver from recording its
// tasks and actors in the cluster's Redis (then `gray list` shows none of
// them, and the job's counts stay 0). It exists to measure what recording
// costs (benchmarks/results/cluster.md); leave it unset otherwise.
const EnvTaskTable = "GRAY_TASK_TABLE"

// newRecorder returns the control store of a cluster driver's node: it
// records the job's tasks, actors and failures in the cluster's Redis for
// `gray list` and the dashboard, off the task path. self is the cluster
// node on the driver's machine ("" if none; then the driver's host names
// it). It returns nil when EnvTaskTable is "off".
func newRecorder(ctx context.Context, r *control.Redis, self, host string) *control.Recorder {
	if os.Getenv(EnvTaskTable) == "off" {
		return nil
	}
	name := self
	if name == "" {
		name = "driver " + host
	}
	return control.NewRecorder(ctx, r, control.RecorderConfig{Node: name, Warn: os.Stderr})
}
