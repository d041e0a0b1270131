package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

func TestLeases(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *Core[int]) string // what the case saw, then its effects
		want string
	}{
		{"a lease takes an idle worker and holds its CPU", func(c *Core[int]) string {
			w, ok := c.Lease(100, cpus(1))
			return leaseSeen(w, ok) + " free=" + itoa(int(c.Available().CPU)) + " " + kinds(c.Effects())
		}, "leased(2) free=1 "},
		{"no lease when the CPUs are held", func(c *Core[int]) string {
			c.Submit(1, cpus(1), true)
			c.Submit(2, cpus(1), true)
			c.Effects()
			w, ok := c.Lease(100, cpus(1))
			return leaseSeen(w, ok)
		}, "refused"},
		{"no lease while tasks are queued: they come first", func(c *Core[int]) string {
			c.Submit(1, cpus(2), true)
			c.Submit(2, cpus(1), false) // waits for a CPU
			c.Effects()
			w, ok := c.Lease(100, cpus(0)) // would fit, and a worker is idle
			return leaseSeen(w, ok)
		}, "refused"},
		{"no lease for GPUs", func(c *Core[int]) string {
			w, ok := c.Lease(100, &task.Resources{CPU: 1, GPU: 1})
			return leaseSeen(w, ok)
		}, "refused"},
		{"nothing queues behind a leased worker", func(c *Core[int]) string {
			c.Lease(100, cpus(1))
			c.Lease(101, cpus(1))
			c.Submit(1, cpus(1), true)
			c.Submit(2, cpus(1), true)
			return kinds(c.Effects())
		}, ""},
		{"returning a lease frees its CPU for queued tasks", func(c *Core[int]) string {
			w, _ := c.Lease(100, cpus(2))
			c.Submit(1, cpus(1), true)
			c.Effects()
			c.TaskDone(w, false)
			return kinds(c.Effects())
		}, "run(2,1)"},
		{"a leased task's Get lends the lease's CPU", func(c *Core[int]) string {
			w, _ := c.Lease(100, cpus(2))
			c.Submit(1, cpus(1), true)
			c.Block(w, c.Epoch(w))
			return kinds(c.Effects())
		}, "run(1,1)"},
		{"the leased worker's death orphans the lease", func(c *Core[int]) string {
			w, _ := c.Lease(100, cpus(1))
			c.WorkerDied(w)
			return kinds(c.Effects()) + " free=" + itoa(int(c.Available().CPU))
		}, "orphan(2,100) spawn(3) free=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := booted(t, task.Resources{CPU: 2}, 2)
			if got := tt.run(c); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			must(t, c)
		})
	}
}

func leaseSeen(w WorkerID, ok bool) string {
	if !ok {
		return "refused"
	}
	return "leased(" + itoa(int(w)) + ")"
}
