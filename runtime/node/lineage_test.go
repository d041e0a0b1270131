package node

import (
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// newSharedHarness is newHarness (one CPU, one worker) with a shared-memory
// store, so that function tasks keep lineage.
func newSharedHarness(t *testing.T) *harness {
	t.Helper()
	st, err := objstore.Open(objstore.Options{Dir: t.TempDir(), Capacity: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessWith(t, Config{Resources: task.Resources{CPU: 1}, NumWorkers: 1, Shared: st})
}

// putShared puts size bytes into the shared store, as gray does for a large
// by-value argument, and returns the object's ID.
func (h *harness) putShared(size int) ids.ObjectID {
	h.t.Helper()
	id := h.n.NewPutID()
	if err := h.n.PutEncoded(id, size, func(b []byte) error { clear(b); return nil }); err != nil {
		h.t.Fatalf("put: %v", err)
	}
	h.check("put")
	return id
}

// sharedResult answers task s with one return of size bytes written into
// the node's shared store, as a worker writes a large result.
func (fw *fakeWorker) sharedResult(t *testing.T, h *harness, s *task.Spec, size int) {
	t.Helper()
	w, err := objstore.CreateFile(h.n.SharedDir(), objects.StoreID(s.Return(0)), int64(size))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	fw.send(t, task.MsgResult, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		b = append(b, 0) // not retiring
		b = append(b, 1) // one return
		return task.AppendObject(b, &task.Object{Shared: true, Size: int64(size)})
	})
}

// exists reports whether the node still holds object id.
func (h *harness) exists(id ids.ObjectID) bool {
	_, ok := h.n.Object(id)
	return ok
}

// TestLineageKeepsByValueArguments: the argument gray puts for a by-value
// call, and drops right after submitting, lives while the task runs and
// then as long as the lineage of the task's shared result needs it; it is
// freed with the result, or when the task ends with nothing to rebuild.
// Every step keeps the node's invariants, and nothing is left recorded.
func TestLineageKeepsByValueArguments(t *testing.T) {
	tests := []struct {
		name string
		// end ends the running task s; it reports whether the argument
		// must outlive the task (its result keeps lineage).
		end func(t *testing.T, h *harness, fw *fakeWorker, s *task.Spec) bool
	}{
		{"a shared result keeps it until the result is freed", func(t *testing.T, h *harness, fw *fakeWorker, s *task.Spec) bool {
			fw.sharedResult(t, h, s, 4096)
			if o := h.get(s.Return(0)); o.Err != nil || !o.Shared {
				t.Fatalf("Get = %+v, want the shared result", o)
			}
			return true
		}},
		{"an inline result does not keep it", func(t *testing.T, h *harness, fw *fakeWorker, s *task.Spec) bool {
			fw.result(t, s, "small")
			h.get(s.Return(0))
			return false
		}},
		{"a task that fails does not keep it", func(t *testing.T, h *harness, fw *fakeWorker, s *task.Spec) bool {
			fw.die()
			if o := h.get(s.Return(0)); !errors.Is(o.Err, task.ErrWorkerDied) {
				t.Fatalf("Get = %+v, want ErrWorkerDied", o)
			}
			return false
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newSharedHarness(t)
			fw := h.worker()
			arg := h.putShared(64 << 10)
			s := h.submit(ref(arg))
			h.n.Drop(arg) // gray drops what it put for the call once submitted
			h.check("drop")
			got := fw.exec(t)
			if got.ID != s.ID || !got.Args[0].Shared {
				t.Fatalf("the worker got %s with argument %+v, want %s with a shared argument", got.ID, got.Args[0], s.ID)
			}
			if !h.exists(arg) {
				t.Fatal("the argument was freed while its task ran: a result lost later could not be rebuilt")
			}
			kept := tt.end(t, h, fw, s)
			if h.exists(arg) != kept {
				t.Fatalf("once the task ended, the argument exists: %v, want %v", h.exists(arg), kept)
			}
			h.n.Drop(s.Return(0))
			h.check("the result dropped")
			if h.exists(arg) || h.exists(s.Return(0)) {
				t.Fatalf("after the result was dropped: argument exists %v, result %v; want neither", h.exists(arg), h.exists(s.Return(0)))
			}
			if n := h.n.Recorded(); n != 0 {
				t.Fatalf("the object table still records %d objects", n)
			}
		})
	}
}

// A Get of a shared result whose copy is gone from the store (on a
// cluster: its node died) rebuilds it from lineage and returns it. The copy
// vanishing before the Get is seen when the request is made (have); Get
// also rebuilds when it finds the copy gone after the answer, a window this
// test cannot open on purpose.
func TestGetRebuildsAVanishedCopy(t *testing.T) {
	h := newSharedHarness(t)
	fw := h.worker()
	s := h.submit(value("x"))
	fw.sharedResult(t, h, fw.exec(t), 4096)
	// Stored, with its lineage (Wait, unlike Get, maps and pins nothing).
	if ready, err := h.n.Wait(t.Context(), []ids.ObjectID{s.Return(0)}, 1, 0); err != nil || !ready[0] {
		t.Fatalf("Wait = %v, %v", ready, err)
	}
	// The copy vanishes behind the node's back.
	if err := h.n.shared.Release(objects.StoreID(s.Return(0))); err != nil {
		t.Fatal(err)
	}
	got := make(chan task.Object, 1)
	go func() {
		objs, err := h.n.Get(t.Context(), []ids.ObjectID{s.Return(0)})
		if err != nil {
			t.Errorf("Get of an object whose copy vanished: %v", err)
			got <- task.Object{}
			return
		}
		got <- objs[0]
	}()
	again := fw.exec(t)
	if again.ID != s.ID {
		t.Fatalf("the worker got %s, want the rebuild of %s", again.ID, s.ID)
	}
	fw.sharedResult(t, h, again, 4096)
	if o := <-got; o.Err != nil || !o.Shared || len(o.Data) != 4096 {
		t.Fatalf("Get = shared %v, %d bytes, %v; want the rebuilt 4096 bytes", o.Shared, len(o.Data), o.Err)
	}
	h.check("rebuilt")
}
