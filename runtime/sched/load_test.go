package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// TestLoad: the core counts the tasks its workers hold and the actors
// holding resources, through each event that changes them.
func TestLoad(t *testing.T) {
	c := booted(t, task.Resources{CPU: 2, Custom: map[string]float64{"a": 1}}, 2)
	one := task.Resources{Custom: map[string]float64{"a": 1}}
	x, y := ids.ActorID{1}, ids.ActorID{2}
	var busy WorkerID
	for _, tc := range []struct {
		step          string
		do            func()
		tasks, actors int
	}{
		{"idle", func() {}, 0, 0},
		{"four tasks: two run, one waits behind a busy worker, one in the queue", func() {
			for i := 1; i <= 4; i++ {
				c.Submit(i, cpus(1), true)
			}
			for _, e := range c.Effects() {
				busy = e.Worker
			}
		}, 3, 0},
		{"an actor starts", func() { c.WaitActor(x, one); c.Effects() }, 3, 1},
		{"an actor that does not fit waits: not counted", func() { c.WaitActor(y, one); c.Effects() }, 3, 1},
		{"a task ends", func() { c.TaskDone(busy, false); c.Effects() }, 2, 1},
		{"the first actor goes: the second starts", func() { c.ActorGone(x); c.Effects() }, 2, 1},
		{"a restarting actor still holds its resources", func() { c.RestartActor(y, one); c.Effects() }, 2, 1},
		{"the busy worker dies: its task comes back (Orphan)", func() { c.WorkerDied(busy); c.Effects() }, 1, 1},
	} {
		tc.do()
		must(t, c)
		if tasks, actors := c.Load(); tasks != tc.tasks || actors != tc.actors {
			t.Fatalf("%s: load %d tasks, %d actors; want %d, %d", tc.step, tasks, actors, tc.tasks, tc.actors)
		}
	}
}
