package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// A Get of a task that ended while it waited, answered and then reopened
// (its object evicted before the answer went out), must not lend the CPUs
// of the task the worker runs now: that task is not blocked, and lending
// its CPU would let another task run on it at the same time.
func TestReopenedGetOfEndedTaskLendsNothing(t *testing.T) {
	c := booted(t, task.Resources{CPU: 1}, 1)
	ws := NewWaits[string](c)
	one := task.Resources{CPU: 1}
	c.Submit(1, &one, false)
	c.Submit(2, &one, false)
	es := c.Effects()
	if len(es) != 1 || es[0].Kind != Run {
		t.Fatalf("effects %s, want one Run", kinds(es))
	}
	w := es[0].Worker

	ws.Add(get("old", w, nil, 1)) // task 1 waits for object 1: its CPU is lent
	if !c.lending(w) {
		t.Fatal("a waiting Get did not lend the worker's CPU")
	}
	c.TaskDone(w, false) // task 1 ends with its Get still open; task 2 runs
	if got, ok := c.Running(w); !ok || got != 2 {
		t.Fatalf("worker %d runs %v (%v), want task 2", w, got, ok)
	}
	c.Effects()

	ws.Stored(obj(1))
	as := ws.Effects()
	if len(as) != 1 || as[0].Payload != "old" {
		t.Fatalf("answers %v, want the old Get's", answers(as))
	}
	ws.Reopen(as[0], 0) // object 1 was evicted before the answer went out
	if c.lending(w) {
		t.Error("the ended task's reopened Get lent out the CPU of the task running now")
	}
	if free := c.Available(); free.CPU != 0 {
		t.Errorf("%g CPU free while task 2 holds the only one", free.CPU)
	}
	must(t, c)
	if err := ws.Check(); err != nil {
		t.Error(err)
	}
}
