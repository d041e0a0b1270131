package objects

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
)

// Reading objects that a Get was answered with: the driver's own (Read),
// and a worker's (PinRead). Between an object becoming ready and its
// reader mapping it, it may be evicted, or lost with the node that held
// it; the reader then waits for it again (it is rebuilt, or replaced by
// an error saying why it cannot be).

// again is a closed channel: Read's answer to read again at once.
var again = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Read returns object id for the driver's Get, which found it ready. A
// shared one is mapped and pinned for the driver (DriverPin) until it is
// freed; the slices decoded from it point into the mapping, which the
// store lays over a Go heap allocation, so they stay valid after the
// object is freed too (objstore, "Lifetime of the owner's slices").
//
// When the object is not readable here now Read returns a channel to wait
// on before reading again: the pull of a copy another node holds, or a
// closed one when the object was evicted or lost since it became ready
// (its rebuild has started: the Get waits for it as for any object).
func (k *Keeper[T]) Read(id ids.ObjectID) (task.Object, <-chan struct{}, error) {
	o, ok := k.store.Get(id)
	if !ok {
		return o, nil, fmt.Errorf("object %s vanished", id)
	}
	if !o.Shared || o.Err != nil {
		return o, nil, nil
	}
	if ch := k.PullLocal(id); ch != nil {
		return o, ch, nil
	}
	b, err := k.shared.Get(StoreID(id))
	if errors.Is(err, objstore.ErrEvicted) || errors.Is(err, objstore.ErrNotFound) {
		k.Have(id)
		return o, again, nil
	}
	if err != nil {
		return o, nil, fmt.Errorf("object %s: %w", id, err)
	}
	k.DriverPin(id)
	o.Data = b
	return o, nil, nil
}

// DriverPin pins the shared object id that the driver's Get mapped, at
// most once per object: that pin lasts until the object is freed. The
// store took a pin when it mapped the object; a second is given back.
func (k *Keeper[T]) DriverPin(id ids.ObjectID) {
	if k.objs.Claims(id, objtable.DriverPin) > 0 {
		_ = k.shared.Unpin(StoreID(id))
		return
	}
	k.objs.Claim(objtable.Holder{}, id, objtable.DriverPin)
}

// PinRead pins for worker h's running task (objtable.ReadPin, until
// UnpinAll at its end) the shared objects oids that a Get of the task is
// answered with, so its mappings stay valid; objects other nodes hold are
// the worker's to pull (Locate). It returns -1 once every one is pinned
// or, when one was evicted since it became ready (rare), replaced by an
// error saying why it cannot be rebuilt; else the index of one being
// rebuilt, which the request must wait for again (sched.Waits.Reopen),
// holding no pin. failed maps the index of an object that could not be
// pinned for another reason to why: the answer carries that error.
func (k *Keeper[T]) PinRead(h objtable.Holder, oids []ids.ObjectID) (reopen int, failed map[int]error) {
	var pinned []ids.ObjectID
	restarts := 0
	for i := 0; i < len(oids); i++ {
		id := oids[i]
		o, ok := k.store.Get(id)
		if !ok || !o.Shared || o.Err != nil || k.RemoteOnly(id) {
			continue
		}
		err := k.Pin(h, id, objtable.ReadPin)
		if err == nil {
			pinned = append(pinned, id)
			continue
		}
		if restarts == len(oids) {
			// Should not happen; never loop: answer with the error.
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = err
			continue
		}
		for _, p := range pinned {
			k.UnpinOne(h, p, objtable.ReadPin)
		}
		pinned = pinned[:0]
		if _, ok := k.Have(id); !ok {
			return i, nil
		}
		// Readable again, or replaced by an error: pin from the start.
		restarts++
		i = -1
	}
	return -1, failed
}

// ReadError is what a Get's answer carries for object id in place of one
// that could not be pinned (PinRead's failed).
func ReadError(id ids.ObjectID, err error) task.Object {
	return task.Object{Err: &task.TaskError{Function: "(object store)", Message: fmt.Sprintf("object %s: %v", id, err), Cause: err}}
}
