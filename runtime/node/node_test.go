package node

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// TestShell steps the node through what a user relies on, with workers
// played by the test (fakeworker_test.go), checking the node's invariants
// after every step.
func TestShell(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"a task runs on a ready worker and Get returns its result", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("x"))
			got := fw.exec(t)
			if got.ID != s.ID || string(got.Args[0].Data) != "x" {
				t.Fatalf("worker got task %s with argument %q, want %s with %q", got.ID, got.Args[0].Data, s.ID, "x")
			}
			fw.result(t, got, "x!")
			if o := h.get(s.Return(0)); o.Err != nil || string(o.Data) != "x!" {
				t.Fatalf("Get = %q, %v; want %q", o.Data, o.Err, "x!")
			}
		}},
		{"a driver's Get waits for the result", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("y"))
			got := make(chan task.Object, 1)
			go func() {
				objs, err := h.n.Get(t.Context(), []ids.ObjectID{s.Return(0)})
				if err != nil {
					t.Errorf("get: %v", err)
				}
				got <- objs[0]
			}()
			fw.result(t, fw.exec(t), "y!")
			if o := <-got; string(o.Data) != "y!" {
				t.Fatalf("Get = %q, want %q", o.Data, "y!")
			}
			h.check("result")
		}},
		{"a reference argument is sent as its value", func(t *testing.T, h *harness) {
			fw := h.worker()
			id := h.put("stored")
			s := h.submit(ref(id))
			got := fw.exec(t)
			if got.Args[0].IsRef || string(got.Args[0].Data) != "stored" {
				t.Fatalf("worker got argument %q (reference: %v), want the value %q", got.Args[0].Data, got.Args[0].IsRef, "stored")
			}
			fw.result(t, got, "")
			h.get(s.Return(0))
		}},
		{"a task waits for the task that makes its argument", func(t *testing.T, h *harness) {
			fw := h.worker()
			a := h.submit(value("a"))
			b := h.submit(ref(a.Return(0)))
			fw.result(t, fw.exec(t), "from a")
			got := fw.exec(t)
			if got.ID != b.ID || got.Args[0].IsRef || string(got.Args[0].Data) != "from a" {
				t.Fatalf("second task %s got argument %q (reference: %v), want %s with %q", got.ID, got.Args[0].Data, got.Args[0].IsRef, b.ID, "from a")
			}
			fw.result(t, got, "b")
			if o := h.get(b.Return(0)); string(o.Data) != "b" {
				t.Fatalf("Get = %q, want %q", o.Data, "b")
			}
		}},
		{"a worker that dies mid-task fails the task with ErrWorkerDied, and a new worker runs the next", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("doomed"))
			fw.exec(t)
			fw.die()
			o := h.get(s.Return(0))
			if o.Err == nil || !errors.Is(o.Err, task.ErrWorkerDied) {
				t.Fatalf("Get = %q, %v; want an error that is ErrWorkerDied", o.Data, o.Err)
			}
			// It died with its worker on this machine: not run again, and
			// the error names the worker (recovery.TaskLost, Local).
			if !strings.HasPrefix(o.Err.Worker, "worker ") || !strings.Contains(o.Err.Message, "the worker process died while running it") {
				t.Fatalf("the error names worker %q and says %q; want the worker and how it died", o.Err.Worker, o.Err.Message)
			}
			next := h.worker()
			s2 := h.submit(value("next"))
			next.result(t, next.exec(t), "ok")
			if o := h.get(s2.Return(0)); string(o.Data) != "ok" {
				t.Fatalf("Get after the death = %q, %v; want %q", o.Data, o.Err, "ok")
			}
		}},
		{"synchronous calls: each Get returns its own task's result, whoever reads the worker's answer", func(t *testing.T, h *harness) {
			// The waiting Get reads the worker's connection itself when it
			// can (pool.Worker.Help); the answer must be the same as serve's.
			fw := h.worker()
			for i := range 200 {
				arg := strconv.Itoa(i)
				s := h.submit(value(arg))
				got := h.getAsync(t, s.Return(0))
				e := fw.exec(t)
				fw.result(t, e, string(e.Args[0].Data)+"!")
				if o := <-got; string(o.Data) != arg+"!" {
					t.Fatalf("call %d: Get = %q, %v; want %q", i, o.Data, o.Err, arg+"!")
				}
			}
			h.check("synchronous calls")
		}},
		{"a worker that dies while a Get waits for its answer fails it with ErrWorkerDied", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("doomed"))
			got := h.getAsync(t, s.Return(0))
			fw.exec(t)
			fw.die()
			if o := <-got; !errors.Is(o.Err, task.ErrWorkerDied) {
				t.Fatalf("Get = %q, %v; want an error that is ErrWorkerDied", o.Data, o.Err)
			}
			h.check("death while waiting")
		}},
		{"a worker's Get of a missing object is answered when it is put", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("z"))
			fw.exec(t)
			id := h.n.NewPutID()
			fw.objects(t, task.MsgGet, 7, id)
			h.check("worker's get")
			if err := h.n.Put(id, task.Object{Data: []byte("late")}); err != nil {
				t.Fatal(err)
			}
			h.check("put")
			if objs := fw.getReply(t, 7); len(objs) != 1 || string(objs[0].Data) != "late" {
				t.Fatalf("worker's Get answered %v, want one object %q", objs, "late")
			}
			fw.result(t, s, "done")
			if o := h.get(s.Return(0)); string(o.Data) != "done" {
				t.Fatalf("Get = %q, want %q", o.Data, "done")
			}
		}},
		{"a worker blocked in Get lends its CPU: another task runs meanwhile", func(t *testing.T, h *harness) {
			first := h.worker()
			a := h.submit(value("a"))
			first.exec(t)
			id := h.n.NewPutID()
			first.objects(t, task.MsgGet, 1, id)
			b := h.submit(value("b"))
			second := h.worker() // started for the lent CPU
			got := second.exec(t)
			if got.ID != b.ID {
				t.Fatalf("second worker got task %s, want %s", got.ID, b.ID)
			}
			if err := h.n.Put(id, task.Object{Data: []byte("v")}); err != nil {
				t.Fatal(err)
			}
			h.check("put")
			second.result(t, got, "b done")
			if objs := first.getReply(t, 1); len(objs) != 1 || string(objs[0].Data) != "v" {
				t.Fatalf("blocked Get answered %v, want one object %q", objs, "v")
			}
			first.result(t, a, "a done")
			for _, s := range []*task.Spec{a, b} {
				if o := h.get(s.Return(0)); o.Err != nil {
					t.Fatalf("task %s: %v", s.ID, o.Err)
				}
			}
		}},
		{"a worker's Wait with a timeout is answered with what exists", func(t *testing.T, h *harness) {
			fw := h.worker()
			s := h.submit(value("w"))
			fw.exec(t)
			have, missing := h.put("here"), h.n.NewPutID()
			fw.send(t, task.MsgWait, func(b []byte) []byte {
				b = wire.AppendUvarint(b, 3)                           // request
				b = wire.AppendUvarint(b, 2)                           // wanted
				b = wire.AppendUvarint(b, uint64(10*time.Millisecond)) // timeout
				b = wire.AppendUvarint(b, 2)
				b = append(b, have[:]...)
				return append(b, missing[:]...)
			})
			d := wire.Dec{B: fw.expect(t, task.MsgWaitReply)}
			rid, n := d.Uvarint(), d.Count()
			ready := []bool{d.Byte() == 1, d.Byte() == 1}
			if d.Err != nil || rid != 3 || n != 2 || !ready[0] || ready[1] {
				t.Fatalf("Wait answered request %d with %d flags %v (%v), want request 3: [true false]", rid, n, ready, d.Err)
			}
			h.check("wait answered")
			fw.result(t, s, "")
			h.get(s.Return(0))
		}},
		{"a failed argument fails the task that takes it, keeping its sentinel", func(t *testing.T, h *harness) {
			fw := h.worker()
			bad := h.n.NewPutID()
			if err := h.n.Put(bad, task.Object{Err: &task.TaskError{Function: "f", Message: "freed", Cause: task.ErrFreed}}); err != nil {
				t.Fatal(err)
			}
			s := h.submit(ref(bad))
			if o := h.get(s.Return(0)); !errors.Is(o.Err, task.ErrFreed) {
				t.Fatalf("Get = %q, %v; want an error that is ErrFreed", o.Data, o.Err)
			}
			// It never reached the worker: the next task is the first it gets.
			next := h.submit(value("next"))
			if got := fw.exec(t); got.ID != next.ID {
				t.Fatalf("the worker got %s, want %s", got.ID, next.ID)
			}
		}},
		{"a task submitted by a task runs while its parent waits for it", func(t *testing.T, h *harness) {
			parentW := h.worker()
			parent := h.submit(value("parent"))
			parentW.exec(t)
			child := task.NewSpec(1)
			child.ID, child.Kind, child.Func, child.NumReturns = ids.Child(parent.ID, 1), task.KindFunc, echoFunc, 1
			child.Args[0] = value("child")
			parentW.send(t, task.MsgSubmit, func(b []byte) []byte { return task.AppendSpec(b, child) })
			parentW.objects(t, task.MsgGet, 1, child.Return(0))
			childW := h.worker() // started on the CPU the parent lends while it waits
			got := childW.exec(t)
			if got.ID != child.ID {
				t.Fatalf("the new worker got %s, want the child %s", got.ID, child.ID)
			}
			childW.result(t, got, "child done")
			if objs := parentW.getReply(t, 1); len(objs) != 1 || string(objs[0].Data) != "child done" {
				t.Fatalf("the parent's Get answered %v, want %q", objs, "child done")
			}
			parentW.result(t, parent, "parent done")
			if o := h.get(parent.Return(0)); string(o.Data) != "parent done" {
				t.Fatalf("Get = %q, %v", o.Data, o.Err)
			}
		}},
		{"Drop deletes an object nothing needs", func(t *testing.T, h *harness) {
			before := h.n.Objects()
			id := h.put("dropped")
			if h.n.Objects() != before+1 {
				t.Fatalf("%d objects after a put, want %d", h.n.Objects(), before+1)
			}
			h.n.Drop(id)
			h.check("drop")
			if h.n.Objects() != before {
				t.Fatalf("%d objects after the drop, want %d", h.n.Objects(), before)
			}
		}},
		{"Free from the driver: a later Get fails with ErrFreed", func(t *testing.T, h *harness) {
			id := h.put("gone soon")
			if err := h.n.Free([]ids.ObjectID{id}); err != nil {
				t.Fatal(err)
			}
			h.check("free")
			if o := h.get(id); !errors.Is(o.Err, task.ErrFreed) {
				t.Fatalf("Get after Free = %q, %v; want ErrFreed", o.Data, o.Err)
			}
		}},
		{"Free from a worker: a later Get fails with ErrFreed", func(t *testing.T, h *harness) {
			fw := h.worker()
			id := h.put("freed by a task")
			s := h.submit(value("f"))
			fw.exec(t)
			fw.objects(t, task.MsgFree, 0, id)
			fw.result(t, s, "freed")
			h.get(s.Return(0)) // the messages are handled in order
			if o := h.get(id); !errors.Is(o.Err, task.ErrFreed) {
				t.Fatalf("Get after the worker's Free = %q, %v; want ErrFreed", o.Data, o.Err)
			}
		}},
		{"Free of a queued task's argument: the task still gets it", func(t *testing.T, h *harness) {
			fw := h.worker()
			id := h.put("kept for the task")
			busy := h.submit(value("busy"))
			s := h.submit(ref(id))
			if err := h.n.Free([]ids.ObjectID{id}); err != nil {
				t.Fatal(err)
			}
			h.check("free")
			fw.result(t, fw.exec(t), "")
			h.get(busy.Return(0))
			got := fw.exec(t)
			if got.ID != s.ID || string(got.Args[0].Data) != "kept for the task" {
				t.Fatalf("queued task %s got %q, want %s with %q", got.ID, got.Args[0].Data, s.ID, "kept for the task")
			}
			fw.result(t, got, "")
			h.get(s.Return(0))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 1, 1)
			tt.run(t, h)
			h.check("the end")
		})
	}
}

// halfFunc asks for half a CPU.
const halfFunc = "nodetest.half"

func init() {
	task.Register(&task.Entry{Name: halfFunc, Kind: task.KindFunc, NumReturns: 1, Res: task.Resources{CPU: 0.5}})
}

// TestPoolGrowsToFreeResources: four half-CPU tasks on two CPUs all run at
// once, each on a worker of its own, so the pool grows past the CPU count.
func TestPoolGrowsToFreeResources(t *testing.T) {
	h := newHarness(t, 2, 2)
	specs := map[ids.TaskID]*task.Spec{}
	for range 4 {
		s := task.NewSpec(0)
		s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindFunc, halfFunc, 1
		if err := h.n.Submit(s); err != nil {
			t.Fatal(err)
		}
		specs[s.ID] = s
	}
	h.check("submit")
	var running []*task.Spec
	var workers []*fakeWorker
	for range 4 { // every task reaches a worker before any finishes
		fw := h.worker()
		got := fw.exec(t)
		if specs[got.ID] == nil {
			t.Fatalf("a worker got unknown task %s", got.ID)
		}
		delete(specs, got.ID)
		running = append(running, got)
		workers = append(workers, fw)
	}
	for i, fw := range workers {
		fw.result(t, running[i], "ok")
	}
	for _, s := range running {
		if o := h.get(s.Return(0)); string(o.Data) != "ok" {
			t.Fatalf("task %s = %q, %v", s.ID, o.Data, o.Err)
		}
	}
	h.check("the end")
}
