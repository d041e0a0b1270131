package sched

import (
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// connectAll connects every spawned worker and returns the effects that
// were not spawns.
func connectAll(t *testing.T, cl *Cluster[int]) []Effect[int] {
	t.Helper()
	var rest []Effect[int]
	for cl.Pending() {
		for _, e := range cl.Effects() {
			if e.Kind == Spawn {
				if NodeOf(e.Worker) != e.Node {
					t.Fatalf("worker %d spawned on node %d", e.Worker, e.Node)
				}
				cl.Step(WorkerReady{W: e.Worker})
				continue
			}
			rest = append(rest, e)
		}
	}
	if err := cl.Check(); err != nil {
		t.Fatal(err)
	}
	return rest
}

// runsOn returns the node of each Run effect, by task.
func runsOn(es []Effect[int]) map[int]NodeID {
	m := map[int]NodeID{}
	for _, e := range es {
		if e.Kind == Run {
			m[e.Task] = e.Node
		}
	}
	return m
}

func TestClusterPlacement(t *testing.T) {
	one := cpus(1)
	tests := []struct {
		name  string
		local float64
		nodes []float64 // CPUs of nodes 1, 2, ...
		tasks int
		want  map[NodeID]int // tasks started per node
	}{
		{"local first", 2, []float64{2}, 2, map[NodeID]int{Local: 2}},
		{"spill when local is full", 1, []float64{2}, 3, map[NodeID]int{Local: 1, 1: 2}},
		{"over every node", 1, []float64{1, 1}, 3, map[NodeID]int{Local: 1, 1: 1, 2: 1}},
		{"no local CPUs", 0, []float64{1, 2}, 3, map[NodeID]int{1: 1, 2: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := NewCluster[int](Config{Total: task.Resources{CPU: tc.local}, Workers: 1})
			for i, c := range tc.nodes {
				if err := cl.AddNode(NodeID(i+1), task.Resources{CPU: c}); err != nil {
					t.Fatal(err)
				}
			}
			cl.Step(Booted{})
			connectAll(t, cl)
			for i := range tc.tasks {
				cl.Step(Submitted[int]{Task: i + 1, Res: one, Pipelined: true})
			}
			got := map[NodeID]int{}
			for _, n := range runsOn(connectAll(t, cl)) {
				got[n]++
			}
			for n, want := range tc.want {
				if got[n] != want {
					t.Errorf("node %d started %d tasks, want %d (all: %v)", n, got[n], want, got)
				}
			}
		})
	}
}

// Data locality: a task whose large arguments live on a node goes there
// when it has room beyond its queue, else where Submit would place it.
func TestClusterSubmitNear(t *testing.T) {
	one := cpus(1)
	tests := []struct {
		name  string
		local float64
		nodes []float64 // CPUs of nodes 1, 2, ...
		near  []NodeID  // the preferred node of each task
		want  map[NodeID]int
	}{
		{"near a node with room, though local has room", 2, []float64{1, 1}, []NodeID{2}, map[NodeID]int{2: 1}},
		{"near a full node: placed as usual", 1, []float64{1, 1}, []NodeID{2, 2}, map[NodeID]int{2: 1, Local: 1}},
		{"near the driver's node", 1, []float64{2}, []NodeID{Local, 1}, map[NodeID]int{Local: 1, 1: 1}},
		{"near a node that left: placed as usual", 1, []float64{1}, []NodeID{7}, map[NodeID]int{Local: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := NewCluster[int](Config{Total: task.Resources{CPU: tc.local}, Workers: 1})
			for i, c := range tc.nodes {
				if err := cl.AddNode(NodeID(i+1), task.Resources{CPU: c}); err != nil {
					t.Fatal(err)
				}
			}
			cl.Step(Booted{})
			connectAll(t, cl)
			for i, k := range tc.near {
				cl.Step(SubmittedNear[int]{Task: i + 1, Res: one, Pipelined: true, Near: k})
			}
			got := map[NodeID]int{}
			for _, n := range runsOn(connectAll(t, cl)) {
				got[n]++
			}
			for n, want := range tc.want {
				if got[n] != want {
					t.Errorf("node %d started %d tasks, want %d (all: %v)", n, got[n], want, got)
				}
			}
		})
	}
}

// A request that only a node not yet joined could hold waits, shows in
// Waiting, and runs there once it joins; a removed node's tasks run again
// elsewhere.
func TestClusterWaitsForNodeAndRemovesNode(t *testing.T) {
	cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
	cl.Step(Booted{})
	connectAll(t, cl)
	gpu := &task.Resources{CPU: 1, GPU: 1}
	cl.Step(Submitted[int]{Task: 1, Res: gpu, Pipelined: false})
	actor := ids.ActorID{7}
	cl.Step(ActorWaits{ID: actor, Res: task.Resources{Custom: map[string]float64{"tpu": 1}}})
	if w := cl.Waiting(); len(w) != 2 {
		t.Fatalf("waiting %v, want the GPU task and the TPU actor", w)
	}
	if err := cl.AddNode(1, task.Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"tpu": 1}}); err != nil {
		t.Fatal(err)
	}
	es := connectAll(t, cl)
	if on := runsOn(es)[1]; on != 1 {
		t.Fatalf("the GPU task runs on node %d, want 1", on)
	}
	if n, ok := cl.ActorNode(actor); !ok || n != 1 {
		t.Fatalf("actor placed on %d (%v), want node 1", n, ok)
	}
	if len(cl.Waiting()) != 0 {
		t.Fatalf("still waiting: %v", cl.Waiting())
	}
	cl.Step(NodeRemoved{Node: 1})
	es = cl.Effects()
	if len(es) != 2 || es[0].Kind != Orphan || es[0].Task != 1 || es[1].Kind != OrphanActor || es[1].Actor != actor {
		t.Fatalf("node 1's removal gave effects %+v, want task 1 and the actor orphaned", es)
	}
	cl.Step(Submitted[int]{Task: 1, Res: gpu, Pipelined: false})
	if len(cl.Waiting()) != 1 {
		t.Fatalf("the GPU task should wait again for a node with a GPU: %v", cl.Waiting())
	}
	if err := cl.Check(); err != nil {
		t.Fatal(err)
	}
}

// A task that no node has room for queues on the node with the fewest
// queued tasks per CPU, the first of equals (place); with one node it
// queues there.
func TestClusterQueuesOnTheLeastLoadedNode(t *testing.T) {
	one := cpus(1)
	tests := []struct {
		name  string
		nodes []float64 // CPUs of nodes 1, 2, ...
		want  []NodeID  // where each task past the CPUs queues
	}{
		{"one node", nil, []NodeID{Local, Local, Local}},
		{"per CPU, first of equals", []float64{2}, []NodeID{Local, 1, 1, Local, 1, 1}},
		{"three nodes", []float64{1, 1}, []NodeID{Local, 1, 2, Local}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := NewCluster[int](Config{Total: task.Resources{CPU: 1}, Workers: 1})
			total := 1
			for i, c := range tc.nodes {
				if err := cl.AddNode(NodeID(i+1), task.Resources{CPU: c}); err != nil {
					t.Fatal(err)
				}
				total += int(c)
			}
			cl.Step(Booted{})
			connectAll(t, cl)
			for i := range total { // every CPU busy
				cl.Step(Submitted[int]{Task: i + 1, Res: one, Pipelined: false})
			}
			connectAll(t, cl)
			for i, want := range tc.want {
				before := map[NodeID]int{}
				for id, c := range cl.cores {
					before[id] = c.Queued()
				}
				cl.Step(Submitted[int]{Task: 100 + i, Res: one, Pipelined: false})
				connectAll(t, cl)
				for id, c := range cl.cores {
					if grew := c.Queued() - before[id]; (id == want) != (grew == 1) {
						t.Fatalf("task %d past the CPUs: node %d's queue grew by %d, want it queued on node %d", i+1, id, grew, want)
					}
				}
			}
		})
	}
}
