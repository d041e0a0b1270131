package sched

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// A restarted actor gets a new worker on the resources it holds, even when
// tasks queue for them; one still waiting starts when they free up, and an
// unknown one (its node gone) waits for its resources anew.
func TestRestartActorKeepsItsResources(t *testing.T) {
	c := booted(t, task.Resources{CPU: 1, GPU: 1}, 1)
	a := ids.TaskID{1}
	c.WaitActor(a, task.Resources{CPU: 1, GPU: 1})
	es := c.Effects()
	if len(es) != 1 || es[0].Kind != StartActor || !slices.Equal(es[0].GPUs, []int{0}) {
		t.Fatalf("effects %s, want the actor started on GPU 0", kinds(es))
	}
	first := es[0].Worker
	c.Submit(7, cpus(1), false) // waits: the actor holds the CPU
	if got := kinds(c.Effects()); got != "" {
		t.Fatalf("a task while the actor holds every CPU: %s, want nothing", got)
	}
	c.RestartActor(a, task.Resources{CPU: 1, GPU: 1})
	es = c.Effects()
	if len(es) != 1 || es[0].Kind != StartActor || es[0].Worker == first || !slices.Equal(es[0].GPUs, []int{0}) {
		t.Fatalf("restart: %s, want a new worker for the actor on the same GPU", kinds(es))
	}
	if free := c.Available(); free.CPU != 0 || free.GPU != 0 {
		t.Fatalf("after the restart %s is free, want nothing: the actor keeps its resources", free)
	}
	must(t, c)

	b := ids.TaskID{2}
	c.WaitActor(b, task.Resources{CPU: 1})
	c.RestartActor(b, task.Resources{CPU: 1})
	if got := kinds(c.Effects()); got != "" {
		t.Fatalf("restart of an actor waiting for resources: %s, want no start yet", got)
	}
	unknown := ids.TaskID{3}
	c.RestartActor(unknown, task.Resources{CPU: 1})
	if got := kinds(c.Effects()); got != "" {
		t.Fatalf("restart of an unknown actor while the CPU is held: %s, want it to wait", got)
	}
	must(t, c)
	for _, gone := range []ids.ActorID{a, b} {
		c.ActorGone(gone)
		var started []ids.ActorID
		for _, e := range c.Effects() {
			if e.Kind == StartActor {
				started = append(started, e.Actor)
			}
		}
		want := map[ids.ActorID]ids.ActorID{a: b, b: unknown}[gone]
		if !slices.Equal(started, []ids.ActorID{want}) {
			t.Fatalf("once %s ended, started %v, want %s: the waiting actors start in order", gone, started, want)
		}
		must(t, c)
	}
}
