package node

import (
	"context"
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The functions of the lost-argument tests: make runs on a node with
// "mk", use on the node with "use" (one CPU: a second use queues behind
// the first).
const (
	makeFunc = "nodetest.make"
	useFunc  = "nodetest.use"
)

func init() {
	task.Register(&task.Entry{Name: makeFunc, Kind: task.KindFunc, NumReturns: 1, Res: task.Resources{CPU: 1, Custom: map[string]float64{"mk": 1}}})
	task.Register(&task.Entry{Name: useFunc, Kind: task.KindFunc, NumReturns: 1, Res: task.Resources{CPU: 1, Custom: map[string]float64{"use": 1}}})
}

// submitFunc submits fn(arg) and returns its spec.
func (h *harness) submitFunc(fn string, arg task.Arg) *task.Spec {
	h.t.Helper()
	s := task.NewSpec(1)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindFunc, fn, 1
	s.Args[0] = arg
	if err := h.n.Submit(s); err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	h.check("submit")
	return s
}

// resultShared answers task s with one shared return of size bytes, left
// in its node's store (a worker on another node).
func (fw *fakeWorker) resultShared(t *testing.T, s *task.Spec, size int64) {
	t.Helper()
	fw.send(t, task.MsgResult, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		b = append(b, 0)
		b = wire.AppendUvarint(b, 1)
		return task.AppendObject(b, &task.Object{Shared: true, Size: size})
	})
}

// A task pipelined behind a busy worker after its argument's only node
// died is not sent: it waits for the argument's rebuild and then runs
// (a result, rebuilt from lineage), or fails naming the loss (a Put,
// lost for good), while the task queued after it runs.
func TestPipelinedTaskWithLostArgument(t *testing.T) {
	for _, c := range []struct {
		name string
		put  bool // the argument is a Put made on the node that dies
	}{{"rebuilt from lineage", false}, {"a Put lost for good", true}} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newClusterHarness(t)
			if err := h.n.AddNode(2, "node 2", task.Resources{CPU: 1, Custom: map[string]float64{"mk": 1}}); err != nil {
				t.Fatal(err)
			}
			mk := h.submitFunc(makeFunc, value("x"))
			fw2 := h.worker()
			x := mk.Return(0)
			if c.put {
				x = ids.Put(mk.ID, 1)
				fw2.send(t, task.MsgPut, func(b []byte) []byte {
					b = append(b, x[:]...)
					return task.AppendObject(b, &task.Object{Shared: true, Size: 1 << 20})
				})
				fw2.result(t, fw2.exec(t), "made")
			} else {
				fw2.resultShared(t, fw2.exec(t), 1<<20)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if ready, err := h.n.Wait(ctx, []ids.ObjectID{mk.Return(0)}, 1, wait); err != nil || !ready[0] {
				t.Fatalf("waiting for the argument's task: %v %v", ready, err)
			}
			if err := h.n.AddNode(1, "node 1", task.Resources{CPU: 1, Custom: map[string]float64{"use": 1}}); err != nil {
				t.Fatal(err)
			}
			a := h.submitFunc(useFunc, value("a"))
			fw1 := h.worker()
			if got := fw1.exec(t); got.ID != a.ID {
				t.Fatalf("node 1's worker got %s, want the first task %s", got.ID, a.ID)
			}
			b := h.submitFunc(useFunc, ref(x)) // queued: node 1 is busy
			h.n.NodeGone(2, "killed by the test")
			h.check("the node's death")
			cc := h.submitFunc(useFunc, value("c")) // b is pipelined behind a now
			fw1.result(t, a, "a")
			if got := fw1.exec(t); got.ID != cc.ID {
				t.Fatalf("node 1's worker got %s next, want %s: the task whose argument was lost was sent as it is", got.ID, cc.ID)
			}
			fw1.result(t, cc, "c")
			if c.put {
				o := h.get(b.Return(0))
				if !errors.Is(o.Err, task.ErrObjectLost) || !errors.Is(o.Err, task.ErrLostPut) {
					t.Fatalf("the task whose Put argument was lost: %q (%v), want ErrObjectLost and ErrLostPut", o.Data, o.Err)
				}
				return
			}
			if err := h.n.AddNode(3, "node 3", task.Resources{CPU: 1, Custom: map[string]float64{"mk": 1}}); err != nil {
				t.Fatal(err)
			}
			fw3 := h.worker()
			if got := fw3.exec(t); got.ID != mk.ID {
				t.Fatalf("node 3's worker got %s, want the rebuild of %s", got.ID, mk.ID)
			}
			fw3.resultShared(t, mk, 1<<20)
			if got := fw1.exec(t); got.ID != b.ID {
				t.Fatalf("node 1's worker got %s, want %s once its argument was rebuilt", got.ID, b.ID)
			}
			fw1.result(t, b, "b")
			if o := h.get(b.Return(0)); string(o.Data) != "b" {
				t.Fatalf("the task whose argument was rebuilt: %q (%v), want %q", o.Data, o.Err, "b")
			}
		})
	}
}

// An actor's call queued (behind a call waiting for its argument) when
// its own argument's only node died is not sent until the argument is
// rebuilt.
func TestQueuedActorCallWithLostArgument(t *testing.T) {
	h, _ := newClusterHarness(t)
	if err := h.n.AddNode(1, "node 1", task.Resources{CPU: 1}); err != nil {
		t.Fatal(err)
	}
	actor, aw := h.createActor(t, nil)
	if err := h.n.AddNode(2, "node 2", task.Resources{CPU: 1, Custom: map[string]float64{"mk": 1}}); err != nil {
		t.Fatal(err)
	}
	mk := h.submitFunc(makeFunc, value("x"))
	fw2 := h.worker()
	fw2.resultShared(t, fw2.exec(t), 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if ready, err := h.n.Wait(ctx, []ids.ObjectID{mk.Return(0)}, 1, wait); err != nil || !ready[0] {
		t.Fatalf("waiting for the argument's task: %v %v", ready, err)
	}
	y := ids.Put(h.n.NewTaskID(), 1) // not stored yet: the first call waits for it
	first := h.callWith(t, actor, ref(y))
	second := h.callWith(t, actor, ref(mk.Return(0)))
	h.n.NodeGone(2, "killed by the test")
	h.check("the node's death")
	if err := h.n.Put(y, task.Object{Data: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if got := aw.exec(t); got.ID != first.ID {
		t.Fatalf("the actor got %s, want its first call %s", got.ID, first.ID)
	}
	aw.result(t, first, "1")
	if err := h.n.AddNode(3, "node 3", task.Resources{CPU: 1, Custom: map[string]float64{"mk": 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-aw.in:
		t.Fatalf("the actor was sent message type %d before the lost argument of its second call was rebuilt", f.typ)
	default:
	}
	fw3 := h.worker() // the argument's rebuild: no worker comes if nothing asks for it
	if got := fw3.exec(t); got.ID != mk.ID {
		t.Fatalf("node 3's worker got %s, want the rebuild of %s", got.ID, mk.ID)
	}
	fw3.resultShared(t, mk, 1<<20)
	if got := aw.exec(t); got.ID != second.ID {
		t.Fatalf("the actor got %s, want its second call %s once its argument was rebuilt", got.ID, second.ID)
	}
	aw.result(t, second, "2")
	if o := h.get(second.Return(0)); string(o.Data) != "2" {
		t.Fatalf("the second call: %q (%v), want %q", o.Data, o.Err, "2")
	}
}

// callWith submits a method call of actor a with one argument.
func (h *harness) callWith(t *testing.T, a *task.Spec, arg task.Arg) *task.Spec {
	t.Helper()
	s := task.NewSpec(1)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindActorMethod, counterInc, 1
	s.Args[0] = arg
	s.SetActor(a.ID)
	if err := h.n.Submit(s); err != nil {
		t.Fatalf("calling the actor: %v", err)
	}
	h.check("call")
	return s
}
