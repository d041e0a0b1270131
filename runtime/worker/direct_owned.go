package worker

import (
	"context"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The results a caller owns (see direct.go): Get, Wait, Drop, Free and the
// publication of those that escape.

// lookup returns the owned result id, or nil.
func (dc *directCalls) lookup(id ids.ObjectID) *owned {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return dc.owned[id]
}

// anyOwned reports whether one of oids is owned here.
func (dc *directCalls) anyOwned(oids []ids.ObjectID) bool {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	for _, id := range oids {
		if dc.owned[id] != nil {
			return true
		}
	}
	return false
}

// get answers a Get of oids, some of them owned here: those wait for their
// results, the rest are asked of the driver.
func (dc *directCalls) get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	if err := dc.await(ctx, oids); err != nil {
		return nil, err
	}
	out := make([]task.Object, len(oids))
	var rest []ids.ObjectID
	var at []int
	for i, id := range oids {
		o := dc.lookup(id)
		if o == nil || o.viaDriver {
			rest = append(rest, id)
			at = append(at, i)
			continue
		}
		dc.mu.Lock()
		out[i] = o.obj
		dc.mu.Unlock()
	}
	if len(rest) > 0 {
		objs, err := dc.w.driverGet(ctx, rest)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			out[i] = objs[j]
		}
	}
	return out, nil
}

// await waits until the owned results among oids have arrived. It waits
// for the one whose call was made last, then looks again: a callee
// answers in order, so a Get of many results of one callee wakes about
// once, not once per result.
func (dc *directCalls) await(ctx context.Context, oids []ids.ObjectID) error {
	for {
		var last *owned
		dc.mu.Lock()
		for _, id := range oids {
			if o := dc.owned[id]; o != nil && !isDone(o.done) && (last == nil || o.seq > last.seq) {
				last = o
			}
		}
		dc.mu.Unlock()
		if last == nil {
			return nil
		}
		if err := dc.awaitOne(ctx, last); err != nil {
			return err
		}
	}
}

// wait answers a Wait of oids, some of them owned here: ready once num of
// them are, or timeout passed (0: no timeout). The others are asked of the
// driver, again each time an owned one arrives before its answer.
func (dc *directCalls) wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		ready := make([]bool, len(oids))
		k := 0
		var rest []ids.ObjectID
		var at []int
		dc.mu.Lock()
		changed := dc.changed
		dc.watchers++
		for i, id := range oids {
			o := dc.owned[id]
			switch {
			case o == nil || o.viaDriver:
				rest = append(rest, id)
				at = append(at, i)
			case isDone(o.done):
				ready[i] = true
				k++
			}
		}
		dc.mu.Unlock()
		unwatch := func() {
			dc.mu.Lock()
			dc.watchers--
			dc.mu.Unlock()
		}
		if k >= num {
			unwatch()
			return ready, nil
		}
		answer := make(chan []bool, 1)
		ask, stop := context.WithCancel(ctx)
		if len(rest) > 0 {
			go func() { // owned by this Wait: stop ends it
				left := time.Duration(0)
				if dl, ok := ask.Deadline(); ok {
					left = max(time.Until(dl), time.Nanosecond)
				}
				r, err := dc.w.driverWait(ask, rest, min(num-k, len(rest)), left)
				if err == nil {
					answer <- r
				}
			}()
		}
		select {
		case r := <-answer:
			stop()
			unwatch()
			for j, i := range at {
				ready[i] = r[j]
			}
			return ready, nil
		case <-changed:
			stop()
			unwatch()
		case <-ctx.Done():
			stop()
			unwatch()
			if timeout > 0 && ctx.Err() == context.DeadlineExceeded {
				return ready, nil
			}
			return nil, ctx.Err()
		}
	}
}

// drop forgets owned result id once the program holds no reference to it;
// one that was published is dropped in the driver too. It reports whether
// id was owned.
func (dc *directCalls) drop(id ids.ObjectID) bool {
	dc.mu.Lock()
	o := dc.owned[id]
	if o == nil {
		dc.mu.Unlock()
		return false
	}
	if !isDone(o.done) {
		o.dropped = true // forgotten when it arrives
		dc.mu.Unlock()
		return true
	}
	delete(dc.owned, id)
	pub := o.published
	dc.mu.Unlock()
	if pub {
		dc.w.dropIDs([]ids.ObjectID{id})
	}
	return true
}

// free frees the owned results among oids (gray.Free) and returns the
// others, and those published, for the driver to free.
func (dc *directCalls) free(oids []ids.ObjectID) []ids.ObjectID {
	var rest []ids.ObjectID
	dc.mu.Lock()
	defer dc.mu.Unlock()
	for _, id := range oids {
		o := dc.owned[id]
		if o == nil || o.viaDriver || o.published {
			rest = append(rest, id)
		}
		if o == nil || o.viaDriver {
			continue
		}
		o.freed = true
		o.obj = task.Object{Err: &task.TaskError{Function: "(object store)", Worker: dc.w.name, Message: "object " + id.String() + " was freed", Cause: task.ErrFreed}}
	}
	return rest
}

// publish puts owned result id in the driver, so that a reference to it
// that leaves this process finds it there. Messages on the driver's
// connection keep their order, so the Put precedes whatever message makes
// the reference leave. A result that has not arrived yet is promised
// instead (MsgPromise) and put when it arrives: waiting for it here could
// deadlock where the driver's path would not (its callee may be calling
// this actor back), and whoever takes the reference meanwhile waits in
// the driver as for any object being computed.
func (dc *directCalls) publish(id ids.ObjectID) {
	o := dc.lookup(id)
	if o == nil {
		return
	}
	dc.pubMu.Lock()
	defer dc.pubMu.Unlock()
	dc.mu.Lock()
	if o.viaDriver || o.published {
		dc.mu.Unlock()
		return
	}
	if !isDone(o.done) {
		o.publish = true // arrived puts it
		if !o.promised {
			// Under dc.mu: a withdrawal (viaDriver) cannot overtake it.
			o.promised = true
			dc.w.promise(id, true)
		}
		dc.mu.Unlock()
		return
	}
	o.published = true
	obj, contained := o.obj, o.contained
	dc.mu.Unlock()
	_ = dc.w.Put(id, obj)
	if contained {
		// The callee's MsgContain for it travels on its own connection
		// and may reach the driver after this put and a drop behind it.
		dc.w.sendPromise(task.PromisePublished, id)
	}
}

// unpromise withdraws the promise of owned result o (ID id), whose call
// goes through the driver after all: the driver stores its result itself.
// Called under dc.mu, before the call's MsgSubmit.
func (dc *directCalls) unpromise(id ids.ObjectID, o *owned) {
	if o.promised {
		o.promised = false
		dc.w.promise(id, false)
	}
}

// promise sends MsgPromise for id (on: it will be put; off: it will not).
func (w *Worker) promise(id ids.ObjectID, on bool) {
	what := task.PromiseOff
	if on {
		what = task.PromiseOn
	}
	w.sendPromise(what, id)
}

// sendPromise sends MsgPromise: what (task.PromiseOn...) of object id.
func (w *Worker) sendPromise(what byte, id ids.ObjectID) {
	_ = w.conn.Send(task.MsgPromise, func(b []byte) []byte {
		return append(append(b, what), id[:]...)
	})
}

// publishArgs publishes the owned results s takes as arguments.
func (dc *directCalls) publishArgs(s *task.Spec) error {
	for _, a := range s.Args {
		if a.IsRef {
			dc.publish(a.Ref)
		}
	}
	return nil
}

// contain notes that parent's value refers to children. Owned children
// are published first. A parent that is the first return of the call
// being made (its argument values hold references) is published when it
// arrives, if the call goes direct (see direct.go).
func (dc *directCalls) contain(parent ids.ObjectID, children []ids.ObjectID) {
	for _, c := range children {
		dc.publish(c)
	}
	next := parent.Index() == 0 && parent.Task() == dc.w.lastTaskID()
	dc.mu.Lock()
	if o := dc.owned[parent]; o != nil {
		o.publish = true
	} else if next {
		dc.contains[parent] = true
	}
	dc.mu.Unlock()
}

// hold holds oids in the driver for this process (MsgHold).
func (w *Worker) hold(oids []ids.ObjectID) {
	_ = w.conn.Send(task.MsgHold, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(oids)))
		for _, id := range oids {
			b = append(b, id[:]...)
		}
		return b
	})
}

// dropIDs ends holds of this process in the driver (MsgDrop).
func (w *Worker) dropIDs(oids []ids.ObjectID) {
	_ = w.conn.Send(task.MsgDrop, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(oids)))
		for _, id := range oids {
			b = append(b, id[:]...)
		}
		return b
	})
}
