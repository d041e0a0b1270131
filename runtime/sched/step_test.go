package sched

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// render writes effects one a line, the way the table below reads them;
// a worker is node.n, the node's n-th.
func render(es []Effect[int]) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s node=%d", e.Kind, e.Node)
		if e.Worker != 0 {
			fmt.Fprintf(&b, " w=%d.%d", NodeOf(e.Worker), e.Worker-FirstWorker(NodeOf(e.Worker))+1)
		}
		if e.Task != 0 {
			fmt.Fprintf(&b, " task=%d", e.Task)
		}
		if e.Actor != (ids.ActorID{}) {
			fmt.Fprintf(&b, " actor=%x", e.Actor[:1])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// stepRow is one event and the effects it must leave, in order.
type stepRow struct {
	ev   Event
	want string
}

// play steps cl through rows, checking each one's effects and the
// cluster's invariants after it.
func play(t *testing.T, cl *Cluster[int], rows []stepRow) {
	t.Helper()
	for i, s := range rows {
		cl.Step(s.ev)
		got := render(cl.Effects())
		if got != s.want {
			t.Errorf("step %d (%T %+v): effects\n%s want\n%s", i, s.ev, s.ev, got, s.want)
		}
		if err := cl.Check(); err != nil {
			t.Fatalf("step %d (%T): %v", i, s.ev, err)
		}
	}
}

// TestStep drives a Cluster of two nodes through Step alone, in the style
// of raft's interaction tests: each row is one event and the effects it
// must leave, in order.
func TestStep(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
	if err := cl.AddNode(1, task.Resources{CPU: 1}); err != nil {
		t.Fatal(err)
	}
	w0, w1 := FirstWorker(Local), FirstWorker(1)
	one := cpus(1)
	actor := ids.ActorID{7}
	steps := []stepRow{
		{Booted{}, "spawn node=0 w=0.1\n"},
		{Submitted[int]{Task: 1, Res: one}, ""}, // w0.1 is starting,
		{WorkerReady{W: w0}, "run node=0 w=0.1 task=1\n"},
		{Submitted[int]{Task: 2, Res: one}, "spawn node=1 w=1.1\n"}, // local is full,
		{WorkerReady{W: w1}, "run node=1 w=1.1 task=2\n"},
		{Submitted[int]{Task: 3, Res: one, Pipelined: true}, ""},      // every CPU is busy: it queues,
		{Blocked{W: w0, Epoch: cl.Epoch(w0)}, "spawn node=0 w=0.2\n"}, // task 1 lends its CPU to task 3,
		{TaskDone{W: w1}, ""},                                         // task 3 waits for w0.2, already starting,
		{ActorWaits{ID: actor, Res: task.Resources{CPU: 1}}, "start-actor node=1 w=1.2 actor=07\n"},
		{WorkerDied{W: w0}, "orphan node=0 w=0.1 task=1\n"},
		{NodeRemoved{Node: 1}, "orphan-actor node=1 actor=07\n"},
		{SpawnFailed{}, "refuse node=0 task=3\n"}, // w0.2 cannot start, and no node is left,
		{Closed{}, ""},
	}
	play(t, cl, steps)
}

// TestStepRest covers the events TestStep leaves out.
func TestStepRest(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
	if err := cl.AddNodeGrant(1, task.Resources{}, nil, task.Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	w0 := FirstWorker(Local)
	one := cpus(1)
	actor := ids.ActorID{7}
	steps := []stepRow{
		{Booted{}, "spawn node=0 w=0.1\n"},
		{WorkerReady{W: w0}, ""}, // nothing to run yet,
		{SubmittedPacked[int]{Task: 1, Res: one, Depth: 2}, "run node=0 w=0.1 task=1\n"},
		{SubmittedPacked[int]{Task: 2, Res: one, Depth: 2}, ""}, // the only CPU is busy,
		{Submitted[int]{Task: 3, Res: one, Pipelined: true}, ""},
		{GaveBack[int]{W: w0, Back: func(x int) bool { return x == 2 }}, ""},
		{Withdrawn[int]{W: w0, Which: func(x int) bool { return x == 3 }}, ""},
		{Blocked{W: w0, Epoch: cl.Epoch(w0)}, ""},
		{Unblocked{W: w0, Epoch: cl.Epoch(w0)}, "resume node=0 w=0.1\n"},     // its CPU is back,
		{Grew{Node: 1, Res: task.Resources{CPU: 1}}, "spawn node=1 w=1.1\n"}, // room for a queued task,
		{SubmittedNear[int]{Task: 4, Res: one, Near: 1}, ""},
		{Reclaimed{Node: 1, Res: task.Resources{CPU: 1}}, ""},
		{ActorWaits{ID: actor, Res: task.Resources{}}, "start-actor node=1 w=1.2 actor=07\n"},
		{ActorRestart{ID: actor, Res: task.Resources{}}, "start-actor node=1 w=1.3 actor=07\n"}, // on the node that held it,
		{ActorGone{ID: actor}, ""},
	}
	play(t, cl, steps)
}

// Step is the hot path of every task (submitted, done): taking an event
// through it must cost no allocation beyond what the event's own handling
// does, as an event boxed to the heap would (one per task and per result).
func TestStepAddsNoAllocation(t *testing.T) {
	res := cpus(1)
	queue := func(step bool) float64 {
		cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
		cl.Step(Booted{})
		cl.Step(WorkerReady{W: FirstWorker(Local)})
		return testing.AllocsPerRun(1000, func() {
			if step {
				cl.Step(Submitted[int]{Task: 1, Res: res, Pipelined: true})
			} else {
				cl.submit(1, res, true)
			}
			cl.Effects()
		})
	}
	if direct, stepped := queue(false), queue(true); stepped > direct {
		t.Errorf("a task submitted through Step costs %.2f allocations, %.2f without it; want no more", stepped, direct)
	}
}
