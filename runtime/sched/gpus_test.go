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

// TestAdmit: what a request no node can hold does, alone and on a
// cluster that nodes may join, and that a wait is told once per name.
func TestAdmit(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 2}, Workers: 1})
	if err := cl.AddNode(1, task.Resources{CPU: 2, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		fn       string
		r        task.Resources
		joinable bool
		first    bool
		fail     string // what the error says; "": admitted
	}{
		{"a node can hold it", "f", task.Resources{CPU: 1, GPU: 1}, true, false, ""},
		{"none can, and none may join", "f", task.Resources{CPU: 4}, false, false, "no node of the cluster"},
		{"none can: it waits, said once", "f", task.Resources{CPU: 4}, true, true, ""},
		{"the same function again", "f", task.Resources{CPU: 8}, true, false, ""},
		{"another function", "g", task.Resources{CPU: 4}, true, true, ""},
		{"more GPUs than any node: no wait", "h", task.Resources{GPU: 3}, true, false, "largest of the cluster's 2 nodes has GPU=2"},
		{"that one later, within the GPUs, is told", "h", task.Resources{CPU: 4}, true, true, ""},
	} {
		first, err := cl.Admit(tc.fn, tc.r, tc.joinable)
		if first != tc.first || (err == nil) != (tc.fail == "") || err != nil && !strings.Contains(err.Error(), tc.fail) {
			t.Errorf("%s: Admit(%s, %v, %v) = %v, %v; want %v and an error saying %q", tc.name, tc.fn, tc.r, tc.joinable, first, err, tc.first, tc.fail)
		}
	}
	if note := WaitNote("f", task.Resources{CPU: 4}); !strings.Contains(note, "f asks for CPU=4") || !strings.Contains(note, "gray start --address") || strings.Contains(note, "\n") {
		t.Errorf("WaitNote = %q: want one line naming the request and how to end the wait", note)
	}
}
