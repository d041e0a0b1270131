package objects

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// TestErrShutdownCrossesProcesses: a worker's task that fails because the
// runtime shut down gives the driver an error for which
// errors.Is(err, ErrShutdown) holds, as a registered sentinel must.
func TestErrShutdownCrossesProcesses(t *testing.T) {
	cause := fmt.Errorf("a nested Get: %w", ErrShutdown)
	b := task.AppendObject(nil, &task.Object{Err: &task.TaskError{Function: "f", Message: cause.Error(), Cause: cause}})
	d := wire.Dec{B: b}
	o := task.DecodeObject(&d)
	if d.Err != nil || o.Err == nil {
		t.Fatalf("decode: %v, %+v", d.Err, o)
	}
	if !errors.Is(o.Err, ErrShutdown) {
		t.Errorf("decoded %q: errors.Is(err, ErrShutdown) = false, want true", o.Err)
	}
}
