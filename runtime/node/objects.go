package node

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// have returns the object id if it is readable now. A shared object that
// was evicted is not: it is rebuilt from its lineage (and waited for like
// any object being computed), or, when it cannot be, replaced by an error
// saying why.
func (n *Node) have(id ids.ObjectID) (task.Object, bool) {
	if n.rec.Retry(id) {
		// The last rebuild failed (the store was full of pinned objects,
		// say): that error answered the requests waiting then, but the
		// object can still be made, so a new request tries again.
		return n.rebuild(id)
	}
	o, ok := n.store.Get(id)
	if !ok || !o.Shared || o.Err != nil || n.shared.Contains(storeID(id)) || n.rec.HasRemote(id) {
		return o, ok
	}
	return n.rebuild(id)
}

// rebuild re-runs the task that made the evicted object id (the recovery
// core decides): it returns the object's loss when it cannot be rebuilt,
// else false (it is being computed).
func (n *Node) rebuild(id ids.ObjectID) (task.Object, bool) {
	for _, e := range n.recover(recovery.Missing{ID: id}) {
		if e.Kind == recovery.Replace && e.ID == id {
			return e.Object, true
		}
	}
	return task.Object{}, false
}

// pinFor pins p's shared-memory argument id in the store until p ends
// (an objtable.ArgPin held by the task).
func (n *Node) pinFor(p *pending, id ids.ObjectID, o task.Object) {
	if o.Shared && o.Err == nil {
		_ = n.pin(objtable.TaskHolder(p.spec.ID), id, objtable.ArgPin)
	}
}

// pin pins shared object id for h, recording it in the object table as a
// claim of pin kind k: in the driver's store, or, for an object only other
// nodes hold, their copies (pinRemote).
func (n *Node) pin(h objtable.Holder, id ids.ObjectID, k objtable.Kind) error {
	if err := n.shared.Pin(storeID(id)); err != nil && !n.pinRemote(id) {
		return err
	}
	n.objs.Claim(h, id, k)
	return nil
}

// unpinOne undoes one pin.
func (n *Node) unpinOne(h objtable.Holder, id ids.ObjectID, k objtable.Kind) {
	n.objs.Release(h, id, k)
	n.unpinStore(id)
}

// unpinAll undoes every pin of kind k that h holds.
func (n *Node) unpinAll(h objtable.Holder, k objtable.Kind) {
	for _, id := range n.objs.ReleaseKind(h, k) {
		n.unpinStore(id)
	}
}

// unpinStore ends one store pin of id.
func (n *Node) unpinStore(id ids.ObjectID) {
	if !n.unpinRemote(id) {
		_ = n.shared.Unpin(storeID(id))
	}
}

// unpinTask undoes the pins of p's arguments, when it ends.
func (n *Node) unpinTask(p *pending) { n.unpinAll(objtable.TaskHolder(p.spec.ID), objtable.ArgPin) }

// unpinReads undoes the pins of what w's running task got, when it ends.
func (n *Node) unpinReads(w *proc) { n.unpinAll(objtable.WorkerHolder(int(w.id)), objtable.ReadPin) }

func storeID(id ids.ObjectID) objstore.ID { return objstore.ID(id.String()) }

// unpin drops a task's claim on an object, freeing it if the program has
// dropped it too.
func (n *Node) unpin(id ids.ObjectID) {
	if n.objs.Release(objtable.Holder{}, id, objtable.TaskArg) {
		n.free(id)
	}
}

// free deletes an object nobody can ask for any more. One still being
// computed is deleted when it arrives.
func (n *Node) free(id ids.ObjectID) {
	if n.objs.Claimed(id) || len(n.waiters[id]) > 0 || n.waits.Waiting(id) {
		n.objs.MarkDropped(id)
		return
	}
	o, ok := n.store.Get(id)
	if !ok {
		n.objs.MarkDropped(id)
		return
	}
	n.objs.Forget(id)
	n.store.Delete(id)
	n.releaseChildren(id)
	if !o.Shared {
		n.rec.Step(recovery.Freed{ID: id}) // no effect for an inline object
		return
	}
	// The store frees the memory at once, or when the last task or Get
	// still reading it unpins it.
	if n.objs.Claims(id, objtable.DriverPin) > 0 {
		n.unpinOne(objtable.Holder{}, id, objtable.DriverPin)
	}
	_ = n.shared.Release(storeID(id))
	n.recover(recovery.Freed{ID: id, Shared: true})
}

// Drop tells the node that the program holds no reference to the object:
// once no queued task needs it either, it is deleted. Only objects whose
// references never left the driver are dropped (see the gray package).
func (n *Node) Drop(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.drop(objtable.Holder{}, id)
	}
	n.mu.Unlock()
}

// Free releases objects the program promised not to use again (gray.Free),
// without waiting for their references to be collected. Queued and running
// tasks that take one as an argument keep it until they end; otherwise its
// memory (shared pages included, which the store reuses for the next put) is
// released at once, and what remains under its ID is a small error saying
// it was freed, so a later Get fails clearly instead of waiting forever.
func (n *Node) Free(oids []ids.ObjectID) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	for _, id := range oids {
		n.freeNow(id)
	}
	return nil
}

func (n *Node) freeNow(id ids.ObjectID) {
	if o, ok := n.store.Get(id); ok && o.Err != nil && errors.Is(o.Err, task.ErrFreed) {
		return // freed before
	}
	n.free(id)
	if _, ok := n.store.Get(id); ok || n.objs.Dropped(id) {
		return // still needed by a task: freed when it ends
	}
	n.store.Put(id, task.Object{Err: &task.TaskError{
		Function: "(object store)",
		Message:  fmt.Sprintf("object %s was freed with gray.Free; do not use a reference after freeing it", id),
		Cause:    task.ErrFreed,
	}})
}

// Objects returns how many objects the node's store holds.
func (n *Node) Objects() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.store.Len()
}

// Put stores an object.
func (n *Node) Put(id ids.ObjectID, o task.Object) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	n.putLocked(id, o)
	return nil
}

func (n *Node) putLocked(id ids.ObjectID, o task.Object) {
	n.store.Put(id, o)
	if n.objs.Dropped(id) {
		defer n.free(id)
	}
	if n.waits.Waiting(id) {
		n.waits.Stored(id)
		n.step()
	}
	ws, ok := n.waiters[id]
	if !ok {
		return
	}
	delete(n.waiters, id)
	for _, w := range ws {
		p := w.p
		if o.Err != nil && p.failed == nil {
			p.failed = o.Err
		}
		p.missing--
		n.pinFor(p, id, o)
		if p.missing == 0 {
			if p.actor != nil {
				n.pump(p.actor)
			} else {
				n.ready(p)
			}
		}
	}
}

// PutEncoded stores a value of codec.InlineThreshold bytes or more in the
// shared-memory store: it is encoded straight into the object's pages.
func (n *Node) PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error {
	if n.shared == nil {
		return errors.New("gray: no shared-memory object store in this session")
	}
	w, err := n.shared.Create(storeID(id), int64(size))
	if err != nil {
		return err
	}
	if err := encode(w.Bytes()); err != nil {
		_ = w.Abort()
		return err
	}
	if err := w.Seal(); err != nil {
		return err
	}
	// Shared memory is invisible to Go's GC pacer: a program that puts and
	// drops large objects would grow the store (and allocate fresh pages)
	// long before a collection runs the dropped Refs' cleanups. Collect
	// after every 1/64 of the capacity put (at least gcEvery), so that
	// freed pages get reused while they are still kept as spares: filling
	// fresh pages is several times slower than a collection of a heap
	// whose large arrays hold no pointers. gray.Free avoids the wait.
	if n.sinceGC.Add(int64(size)) > max(n.shared.Capacity()/64, gcEvery) {
		n.sinceGC.Store(0)
		runtime.GC()
	}
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	n.putLocked(id, task.Object{Shared: true, Size: int64(size)})
	return nil
}

// gcEvery is the fewest bytes put into shared memory between the garbage
// collections PutEncoded forces.
const gcEvery = 32 << 20

// SharedDir returns the shared-memory store's directory ("" without one).
func (n *Node) SharedDir() string {
	if n.shared == nil {
		return ""
	}
	return n.shared.Dir()
}

// SharedStats returns the shared-memory store's bookkeeping.
func (n *Node) SharedStats() objstore.Stats {
	if n.shared == nil {
		return objstore.Stats{}
	}
	return n.shared.Stats()
}

// adopt records a shared object that a worker wrote and sealed; a failure
// (no room, say) becomes the object's value.
func (n *Node) adopt(id ids.ObjectID, o task.Object, w *proc) task.Object {
	if !o.Shared || o.Err != nil {
		return o
	}
	if n.shared == nil {
		return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: "a worker wrote a shared object but the session has no object store"}}
	}
	err := n.shared.Adopt(storeID(id))
	if err == nil || (errors.Is(err, objstore.ErrExists) && n.shared.Contains(storeID(id))) {
		return o
	}
	return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: fmt.Sprintf("storing object %s: %v", id, err), Cause: err}}
}

// sealReserved seals a task result that worker w wrote into room reserved
// for it (see reserve), or drops the room if the task failed instead.
func (n *Node) sealReserved(id ids.ObjectID, o task.Object, w *proc) task.Object {
	if !o.Shared || o.Err != nil {
		_ = n.shared.Abort(storeID(id))
		return o
	}
	if err := n.shared.Seal(storeID(id)); err != nil {
		return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: fmt.Sprintf("storing object %s: %v", id, err), Cause: err}}
	}
	return o
}

// abortReserved drops the room reserved for w's results that were not
// delivered (the task failed, or the worker died).
func (n *Node) abortReserved(w *proc) {
	for id := range w.reserved {
		_ = n.shared.Abort(storeID(id))
	}
	clear(w.reserved)
}

// reserve makes room in the shared-memory store for a task result that
// worker w is about to write (MsgReserve), reusing the pages of freed
// objects, and answers with a MsgReserveReply. The store is called without
// the node's lock: allocating fresh pages can take a while.
func (n *Node) reserve(w *proc, rid uint64, id ids.ObjectID, size int64) {
	status, msg := task.ReserveOK, ""
	var err error
	if n.shared == nil {
		err = errors.New("the session has no shared-memory object store")
	} else {
		err = n.shared.Reserve(storeID(id), size)
	}
	switch {
	case err == nil:
	case errors.Is(err, objstore.ErrExists) && n.shared.Contains(storeID(id)):
		status = task.ReserveExists
	default:
		status, msg = task.ReserveFailed, err.Error()
	}
	n.mu.Lock()
	if status == task.ReserveOK {
		if w.dead || n.closed {
			_ = n.shared.Abort(storeID(id))
		} else {
			if w.reserved == nil {
				w.reserved = map[ids.ObjectID]bool{}
			}
			w.reserved[id] = true
		}
	}
	_ = n.append(w, task.MsgReserveReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = append(b, status)
		return wire.AppendString(b, msg)
	})
	n.unlockFor(w)
}
