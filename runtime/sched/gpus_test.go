package sched

import (
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

func TestGPUShort(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 2}, Workers: 1})
	if err := cl.AddNode(1, task.Resources{CPU: 2, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    task.Resources
		fail bool
	}{
		{"no GPU", task.Resources{CPU: 4}, false},
		{"as many as the largest node", task.Resources{GPU: 2}, false},
		{"more than any node", task.Resources{GPU: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cl.GPUShort("f", tc.r)
			if (err != nil) != tc.fail {
				t.Fatalf("GPUShort(%v) = %v, want failure %v", tc.r, err, tc.fail)
			}
			if err != nil && (!strings.Contains(err.Error(), "GPU=3") || !strings.Contains(err.Error(), "GPU=2") || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("error %q: want one line naming the request and the largest node", err)
			}
		})
	}
}
