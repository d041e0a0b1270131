package sched

import (
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// startsOn returns the node of each StartActor effect, by actor.
func startsOn(es []Effect[int]) map[ids.ActorID]NodeID {
	m := map[ids.ActorID]NodeID{}
	for _, e := range es {
		if e.Kind == StartActor {
			m[e.Actor] = e.Node
		}
	}
	return m
}

// A full cluster loses a node: the actors it held restart, and those that
// find no room wait (Stalled says for what) until a node joins, where
// they then start; queued tasks waiting on a full node move to a node
// that frees up.
func TestSpread(t *testing.T) {
	one := task.Resources{CPU: 1}
	t.Run("actors move to a node that joins", func(t *testing.T) {
		cl := NewCluster[int](Config{Total: task.Resources{CPU: 2}, Workers: 1})
		for k := NodeID(1); k <= 2; k++ {
			if err := cl.AddNode(k, task.Resources{CPU: 2}); err != nil {
				t.Fatal(err)
			}
		}
		cl.Step(Booted{})
		connectAll(t, cl)
		for i := range 6 {
			cl.Step(ActorWaits{ID: ids.ActorID{byte(i + 1)}, Res: one})
		}
		on := startsOn(connectAll(t, cl))
		if len(on) != 6 {
			t.Fatalf("%d actors started on a cluster of 6 CPUs, want 6", len(on))
		}
		if _, ok := cl.Stalled(); ok {
			t.Fatal("Stalled with every actor started")
		}
		cl.Step(NodeRemoved{Node: 1})
		var lost []ids.ActorID
		for _, e := range cl.Effects() {
			if e.Kind == OrphanActor {
				lost = append(lost, e.Actor)
			}
		}
		if len(lost) != 2 {
			t.Fatalf("node 1 held %d actors, want 2", len(lost))
		}
		for _, a := range lost { // the caller restarts them
			cl.Step(ActorWaits{ID: a, Res: one})
		}
		if got := startsOn(connectAll(t, cl)); len(got) != 0 {
			t.Fatalf("actors started with every live CPU held: %v", got)
		}
		st, ok := cl.Stalled()
		if !ok || st.Actors != 2 || st.Need.CPU != 2 || st.Alive.CPU != 4 || st.Had.CPU != 6 {
			t.Fatalf("Stalled = %+v, %v; want 2 actors lacking 2 CPUs, 4 of 6 alive", st, ok)
		}
		if s := st.String(); !strings.Contains(s, "2 actors waiting for 2 CPUs") || !strings.Contains(s, "4 CPUs of the cluster's 6 CPUs") {
			t.Fatalf("the line says %q", s)
		}
		if err := cl.AddNode(3, task.Resources{CPU: 2}); err != nil {
			t.Fatal(err)
		}
		got := startsOn(connectAll(t, cl))
		for _, a := range lost {
			if got[a] != 3 {
				t.Fatalf("actor %v started on node %d, want the node that joined (3); all: %v", a, got[a], got)
			}
		}
		if _, ok := cl.Stalled(); ok {
			t.Fatal("still Stalled once the actors started")
		}
	})
	t.Run("queued tasks move to a node that frees up", func(t *testing.T) {
		cl := NewCluster[int](Config{Total: task.Resources{}, Workers: 1})
		for k := NodeID(1); k <= 2; k++ {
			if err := cl.AddNode(k, task.Resources{CPU: 1}); err != nil {
				t.Fatal(err)
			}
		}
		cl.Step(Booted{})
		connectAll(t, cl)
		// Task 1 runs on node 1, task 2 on node 2; tasks 3 and 4 queue
		// (not pipelined), one on each.
		for i := 1; i <= 4; i++ {
			cl.Step(Submitted[int]{Task: i, Res: &one, Pipelined: false})
		}
		first := runsOn(connectAll(t, cl))
		if len(first) != 2 {
			t.Fatalf("%d tasks started on 2 CPUs: %v", len(first), first)
		}
		// Task 2's node frees up: both queued tasks run, one there now,
		// the other as soon as that node has room, never waiting for
		// node 1's long task.
		var w2 WorkerID
		for id, x := range cl.Node(2).pool {
			if len(x.tasks) > 0 {
				w2 = id
			}
		}
		cl.Step(TaskDone{W: w2, Retiring: false})
		next := runsOn(connectAll(t, cl))
		if len(next) != 1 {
			t.Fatalf("after a task ended on node 2, %d started: %v", len(next), next)
		}
		cl.Step(TaskDone{W: w2, Retiring: false})
		last := runsOn(connectAll(t, cl))
		if len(last) != 1 || cl.Node(1).Queued() != 0 {
			t.Fatalf("the task queued on busy node 1 did not move to node 2 once it freed up: started %v, %d still queued on node 1", last, cl.Node(1).Queued())
		}
		for _, n := range last {
			if n != 2 {
				t.Fatalf("it started on node %d, want 2", n)
			}
		}
	})
	t.Run("an actor goes where a grant can grow, not behind live actors", func(t *testing.T) {
		// Node 1's one "a" is held by a live actor; node 2's grant was
		// given back (idle). An actor that needs "a" must wait on node 2,
		// whose grant can grow (it asks its daemon), never on node 1,
		// where it would wait for ever and ask for nothing.
		a := task.Resources{Custom: map[string]float64{"a": 1}}
		cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
		if err := cl.AddNode(1, a); err != nil {
			t.Fatal(err)
		}
		if err := cl.AddNodeGrant(2, task.Resources{}, nil, a); err != nil {
			t.Fatal(err)
		}
		cl.Step(Booted{})
		connectAll(t, cl)
		cl.Step(ActorWaits{ID: ids.ActorID{1}, Res: a})
		if on := startsOn(connectAll(t, cl)); on[ids.ActorID{1}] != 1 {
			t.Fatalf("the first actor started on %v, want node 1", on)
		}
		cl.Step(ActorWaits{ID: ids.ActorID{2}, Res: a})
		connectAll(t, cl)
		if n, _ := cl.ActorNode(ids.ActorID{2}); n != 2 {
			t.Fatalf("the second actor waits on node %d, want 2 (whose grant can grow)", n)
		}
		if v, _ := cl.Grant(2); v.Want.Custom["a"] != 1 {
			t.Fatalf("node 2's grant view wants %v, want a=1", v.Want)
		}
		cl.Step(Grew{Node: 2, Res: a, GPUs: nil})
		if on := startsOn(connectAll(t, cl)); on[ids.ActorID{2}] != 2 {
			t.Fatalf("once node 2's grant grew the second actor started on %v, want node 2", on)
		}
	})
}
