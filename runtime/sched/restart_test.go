package sched

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// A restarted actor gets a new worker on the resources it holds, even when
// tasks queue for them; one still waiting starts when they free up, and an
// unknown one is refused.
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
	if !c.RestartActor(a) {
		t.Fatal("RestartActor of a live actor reported it unknown")
	}
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
	if !c.RestartActor(b) || len(c.Effects()) != 0 {
		t.Fatal("restart of an actor waiting for resources: want it known, and no start yet")
	}
	if c.RestartActor(ids.TaskID{3}) {
		t.Fatal("RestartActor of an unknown actor reported it known")
	}
	c.ActorGone(a)
	started := false
	for _, e := range c.Effects() {
		started = started || (e.Kind == StartActor && e.Actor == b)
	}
	if !started {
		t.Fatal("the waiting actor did not start once the restarted one ended")
	}
	must(t, c)
}
