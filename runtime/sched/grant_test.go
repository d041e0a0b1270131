package sched

import (
	"fmt"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

func res(cpu, gpu float64) task.Resources {
	return task.Resources{CPU: cpu, GPU: gpu, Custom: map[string]float64{}}
}

// A node's grant as the driver sees it: what queued work wants beyond the
// grant (within the node's capacity), what is spare, and what a reclaim
// gave back, step by step.
func TestGrantView(t *testing.T) {
	type step struct {
		do                          string // "submit N", "finish", "grow C", "reclaim C", "block", "actor C G"
		want, spare, held, returned task.Resources
	}
	tests := []struct {
		name            string
		granted, capVal task.Resources
		steps           []step
	}{
		{"nothing queued: all spare", res(2, 0), res(4, 0), []step{
			{do: "", want: res(0, 0), spare: res(2, 0), held: res(2, 0)},
		}},
		{"queued beyond the grant: want it, up to capacity", res(1, 0), res(3, 0), []step{
			{do: "submit 5", want: res(2, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "grow 1", want: res(1, 0), spare: res(0, 0), held: res(2, 0)},
			{do: "grow 1", want: res(0, 0), spare: res(0, 0), held: res(3, 0)},
		}},
		{"no grant at all: queued tasks want it", res(0, 0), res(2, 0), []step{
			{do: "submit 1", want: res(1, 0), spare: res(0, 0), held: res(0, 0)},
			{do: "grow 2", want: res(0, 0), spare: res(1, 0), held: res(2, 0)},
		}},
		{"reclaim takes what is free at once", res(3, 0), res(3, 0), []step{
			{do: "submit 1", want: res(0, 0), spare: res(2, 0), held: res(3, 0)},
			{do: "reclaim 2", want: res(0, 0), spare: res(0, 0), held: res(1, 0), returned: res(2, 0)},
		}},
		{"reclaim of a busy grant waits for tasks to end, and beats the queue", res(2, 0), res(2, 0), []step{
			{do: "submit 4", want: res(0, 0), spare: res(0, 0), held: res(2, 0)},
			{do: "reclaim 1", want: res(0, 0), spare: res(0, 0), held: res(2, 0)},
			// The queue still wants the CPU back: the daemon decides.
			{do: "finish", want: res(1, 0), spare: res(0, 0), held: res(1, 0), returned: res(1, 0)},
			{do: "finish", want: res(1, 0), spare: res(0, 0), held: res(1, 0)},
		}},
		{"reclaim of a worker with tasks queued behind it recalls them", res(1, 0), res(1, 0), []step{
			{do: "pipeline 3", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "reclaim 1", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "give back", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			// Freed when the running task ends, not after the other two.
			{do: "finish", want: res(1, 0), spare: res(0, 0), held: res(0, 0), returned: res(1, 0)},
		}},
		{"a worker recalled between two tasks gives them all back: what it held is paid at once", res(1, 0), res(1, 0), []step{
			{do: "pipeline 3", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "reclaim 1", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "give back all", want: res(1, 0), spare: res(0, 0), held: res(0, 0), returned: res(1, 0)},
		}},
		{"a blocked worker's lent CPU is neither spare nor reclaimed", res(1, 0), res(1, 0), []step{
			{do: "submit 1", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "block", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
			{do: "reclaim 1", want: res(0, 0), spare: res(0, 0), held: res(1, 0)},
		}},
		{"GPUs are granted and wanted whole", res(1, 0), res(2, 2), []step{
			{do: "actor 1 1", want: res(0, 1), spare: res(0, 0), held: res(1, 0)},
			{do: "grow 0 1", want: res(0, 0), spare: res(0, 0), held: res(1, 1)},
			{do: "grow 1 1", want: res(0, 0), spare: res(1, 1), held: res(2, 2)},
			{do: "reclaim 0 1", want: res(0, 0), spare: res(1, 0), held: res(2, 1), returned: res(0, 1)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := NewCluster[int](Config{Total: res(0, 0), Workers: 1})
			if err := cl.AddNodeGrant(1, tc.granted, nil, tc.capVal); err != nil {
				t.Fatal(err)
			}
			next := 0
			var running []WorkerID
			recalled := map[WorkerID]bool{}
			first := map[WorkerID]int{} // the task each worker started first

			settle := func() {
				for cl.Pending() {
					for _, e := range cl.Effects() {
						switch e.Kind {
						case Spawn:
							cl.Step(WorkerReady{W: e.Worker})
						case Run:
							running = append(running, e.Worker)
							if _, ok := first[e.Worker]; !ok {
								first[e.Worker] = e.Task
							}
						case Recall:
							recalled[e.Worker] = true
						}
					}
				}
			}
			for i, s := range tc.steps {
				var a, b float64
				switch {
				case s.do == "":
				case s.do == "finish":
					w := running[0]
					running = running[1:]
					cl.Step(TaskDone{W: w, Retiring: false})
				case s.do == "block":
					cl.Step(Blocked{W: running[0], Epoch: cl.Epoch(running[0])})
				case s.do == "give back all":
					for w := range recalled {
						cl.Step(GaveBack[int]{W: w, Back: func(int) bool { return true }})
					}
					running = nil
					clear(recalled)
				case s.do == "give back":
					if len(recalled) == 0 {
						t.Fatal("nothing recalled")
					}
					for w := range recalled {
						cl.Step(GaveBack[int]{W: w, Back: func(x int) bool { return x != first[w] }}) // it runs the first
						running = running[:1]
					}
					clear(recalled)
				default:
					var verb string
					n, _ := fmt.Sscan(s.do, &verb, &a, &b)
					if n < 2 {
						t.Fatalf("bad step %q", s.do)
					}
					switch verb {
					case "submit", "pipeline":
						for range int(a) {
							next++
							cl.Step(Submitted[int]{Task: next, Res: cpus(1), Pipelined: verb == "pipeline"})
						}
					case "grow":
						cl.Step(Grew{Node: 1, Res: res(a, b), GPUs: nil})
					case "reclaim":
						cl.Step(Reclaimed{Node: 1, Res: res(a, b)})
					case "actor":
						cl.Step(ActorWaits{ID: ids.ActorID{byte(i)}, Res: res(a, b)})
					}
				}
				settle()
				if err := cl.Check(); err != nil {
					t.Fatalf("step %d (%s): %v", i, s.do, err)
				}
				v, ok := cl.Grant(1)
				if !ok {
					t.Fatal("no node 1")
				}
				for _, c := range []struct {
					what      string
					got, want task.Resources
				}{{"want", v.Want, s.want}, {"spare", v.Spare, s.spare}, {"held", v.Held, s.held}, {"returned", v.Returned, s.returned}} {
					if !c.got.Equal(c.want) {
						t.Errorf("step %d (%s): %s %s, want %s", i, s.do, c.what, c.got, c.want)
					}
				}
			}
		})
	}
}

// A task that fits the node's capacity but not the grant waits on that
// node for the grant to grow; one beyond every capacity waits for a node.
func TestGrantPlacementByCapacity(t *testing.T) {
	cl := NewCluster[int](Config{Total: res(0, 0), Capacity: res(1, 0), Workers: 1})
	if err := cl.AddNodeGrant(1, res(0, 0), nil, res(4, 0)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Feasible("f", res(3, 0)); err != nil {
		t.Fatalf("a 3-CPU task on a 4-CPU node with no grant yet: %v", err)
	}
	if cl.Feasible("f", res(5, 0)) == nil {
		t.Fatal("a 5-CPU task is feasible on nodes of 1 and 4 CPUs")
	}
	cl.Step(Submitted[int]{Task: 1, Res: cpus(3), Pipelined: false})
	connectAll(t, cl)
	if n := cl.Node(1).Queued(); n != 1 {
		t.Fatalf("node 1 queues %d tasks, want the 3-CPU one", n)
	}
	cl.Step(Grew{Node: 1, Res: res(3, 0), GPUs: nil})
	if got := runsOn(connectAll(t, cl)); got[1] != 1 {
		t.Fatalf("after the grant grew, runs %v, want task 1 on node 1", got)
	}
}
