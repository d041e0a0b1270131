package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// The stall line is what a user reads while a run waits: it must read as
// English whatever is missing, also a custom resource no node offers
// (it read "nothing of the cluster's nothing are alive") and a cluster
// whose every node with it died.
func TestStallString(t *testing.T) {
	cpus := func(n float64) task.Resources { return task.Resources{CPU: n} }
	b := func(n float64) task.Resources { return task.Resources{Custom: map[string]float64{"B": n}} }
	for _, tc := range []struct {
		name string
		s    Stall
		want string
	}{
		{"CPUs held", Stall{Actors: 1, Need: cpus(1), Alive: cpus(4), Had: cpus(6)},
			"1 actor waiting for 1 CPU: 4 CPUs of the cluster's 6 CPUs are alive and held by actors; they start when a node joins (gray start --address ...) or an actor ends"},
		{"every node with it died", Stall{Actors: 2, Need: b(1), Had: b(2)},
			"2 actors waiting for B=1: none of the cluster's B=2 are alive and held by actors; they start when a node joins (gray start --address ...) or an actor ends"},
		{"no node has it", Stall{Actors: 1, Need: b(0.5)},
			"1 actor waiting for B=0.5: no node of the cluster has any; they start when a node that has it joins (gray start --address ... --num-cpus/--num-gpus/--resources)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
