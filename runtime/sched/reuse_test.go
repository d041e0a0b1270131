package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

func TestActorsReuseIdleWorkers(t *testing.T) {
	gpu := task.Resources{CPU: 1, GPU: 1}
	tests := []struct {
		name  string
		total task.Resources
		run   func(c *Core[int]) []Effect[int]
		want  string
	}{
		{"a CPU actor takes an idle worker and the pool starts a replacement", task.Resources{CPU: 2}, func(c *Core[int]) []Effect[int] {
			c.WaitActor(ids.ActorID{1}, task.Resources{CPU: 1})
			return c.Effects()
		}, "spawn(3) start-actor(2,reused)"},
		{"an actor of no CPUs takes one too", task.Resources{CPU: 2}, func(c *Core[int]) []Effect[int] {
			c.WaitActor(ids.ActorID{1}, task.Resources{})
			return c.Effects()
		}, "spawn(3) start-actor(2,reused)"},
		{"a burst takes every idle worker, then gets new processes", task.Resources{CPU: 2}, func(c *Core[int]) []Effect[int] {
			for i := byte(1); i <= 3; i++ {
				c.WaitActor(ids.ActorID{i}, task.Resources{})
			}
			return c.Effects()
		}, "spawn(3) start-actor(2,reused) spawn(4) start-actor(1,reused) start-actor(5)"},
		{"busy workers are not taken", task.Resources{CPU: 2}, func(c *Core[int]) []Effect[int] {
			c.Submit(1, cpus(1), true)
			c.Submit(2, cpus(1), true)
			c.WaitActor(ids.ActorID{1}, task.Resources{})
			return c.Effects()
		}, "run(2,1) run(1,2) start-actor(3)"},
		{"an actor with a GPU gets a new process", gpu, func(c *Core[int]) []Effect[int] {
			c.WaitActor(ids.ActorID{1}, gpu)
			return c.Effects()
		}, "start-actor(2)"},
		{"a worker that held a GPU never hosts an actor", gpu, func(c *Core[int]) []Effect[int] {
			c.Submit(1, &gpu, true)
			c.TaskDone(1, false)
			c.WaitActor(ids.ActorID{1}, task.Resources{})
			return c.Effects()
		}, "run(1,1) start-actor(2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := booted(t, tt.total, int(tt.total.CPU))
			if got := kinds(tt.run(c)); got != tt.want {
				t.Errorf("effects %q, want %q", got, tt.want)
			}
			must(t, c)
			// The reused workers are out of the pool: events naming them
			// change nothing, and the pool stays whole.
			c.WorkerDied(1)
			c.WorkerDied(2)
			must(t, c)
		})
	}
}

func TestRemoteNodesNeverReuse(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 0}, Workers: 1})
	if err := cl.AddNode(1, task.Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	cl.Effects()
	c := cl.Node(1)
	c.Boot()
	for _, e := range cl.Effects() {
		c.WorkerReady(e.Worker)
	}
	cl.Effects()
	c.WaitActor(ids.ActorID{1}, task.Resources{CPU: 1})
	started := false
	for _, e := range cl.Effects() {
		if e.Kind == StartActor && e.Reused {
			t.Fatalf("an actor on another node took pool worker %d; that node's daemon starts its actors", e.Worker)
		}
		started = started || e.Kind == StartActor
	}
	if !started {
		t.Fatal("the actor did not start")
	}
}
