package driver

import (
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// What a job publishes as waiting lists each request once: an actor no
// live node can hold is both a request no node can hold and a stalled
// actor (gray status showed "a request for C=0.5" twice).
func TestWaitingLoadListsARequestOnce(t *testing.T) {
	c := func(n float64) task.Resources { return task.Resources{Custom: map[string]float64{"C": n}} }
	cpu := func(n float64) task.Resources { return task.Resources{CPU: n} }
	for _, tc := range []struct {
		name    string
		cannot  []task.Resources
		stall   task.Resources
		stalled bool
		want    []task.Resources
	}{
		{"nothing waits", nil, task.Resources{}, false, nil},
		{"only what no node can hold", []task.Resources{c(0.5)}, task.Resources{}, false, []task.Resources{c(0.5)}},
		{"the same actor in both", []task.Resources{c(0.5)}, c(0.5), true, []task.Resources{c(0.5)}},
		{"two actors in both", []task.Resources{c(0.5), c(0.5)}, c(1), true, []task.Resources{c(0.5), c(0.5)}},
		{"a stall of its own", nil, cpu(2), true, []task.Resources{cpu(2)}},
		{"a stall beyond", []task.Resources{c(0.5)}, task.Resources{CPU: 1, Custom: map[string]float64{"C": 0.5}}, true, []task.Resources{c(0.5), cpu(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitingLoad(tc.cannot, tc.stall, tc.stalled)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
