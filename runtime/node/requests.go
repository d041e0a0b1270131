package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// newRequest registers a Get (need = len) or Wait request.
func (n *Node) newRequest(w *proc, id uint64, oids []ids.ObjectID, need int, wait bool) *request {
	r := &request{w: w, id: id, wait: wait, ids: oids, ready: make([]bool, len(oids)), need: need}
	for i, o := range oids {
		if _, ok := n.have(o); ok {
			r.ready[i] = true
			r.have++
		}
	}
	if w == nil {
		r.ch = make(chan struct{})
	}
	if r.have >= r.need {
		r.done = true
		if r.ch != nil {
			close(r.ch)
		}
		return r
	}
	for i, o := range oids {
		if !r.ready[i] {
			n.waiters[o] = append(n.waiters[o], waiter{r: r, i: i})
		}
	}
	return r
}

// complete finishes a request: a driver request's channel closes; a worker
// that gave its CPU back must get it again before it resumes.
func (n *Node) complete(r *request) {
	if r.done {
		return
	}
	r.done = true
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.w == nil {
		close(r.ch)
		return
	}
	w := r.w
	if w.dead {
		return
	}
	if r.counts && !n.core.Unblock(w.id, r.epoch) {
		// The worker lent its CPUs out while blocked: it goes on once
		// they are free again (sched.Resume).
		w.parked = append(w.parked, r)
		n.step()
		return
	}
	n.reply(r)
}

func (n *Node) reply(r *request) {
	w := r.w
	if r.wait {
		_ = n.append(w, task.MsgWaitReply, func(b []byte) []byte {
			b = wire.AppendUvarint(b, r.id)
			b = wire.AppendUvarint(b, uint64(len(r.ready)))
			for _, ok := range r.ready {
				if ok {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			}
			return b
		})
		return
	}
	// Pin the shared objects until the worker's task ends, so its mappings
	// stay valid. One evicted since it became ready (rare: between
	// readiness and this reply) is rebuilt from its lineage and the request
	// waits for it again, as if it had not been ready; one that cannot be
	// rebuilt has been replaced by an error saying why, which is sent.
	pinned := w.readPins
	restarts := 0
	var failed map[int]error
	for i := 0; i < len(r.ids); i++ {
		id := r.ids[i]
		o, ok := n.store.Get(id)
		if !ok || !o.Shared || o.Err != nil || n.remoteOnly(id) {
			continue // a remote one: the worker pulls it (locate)
		}
		err := n.shared.Pin(storeID(id))
		if err == nil {
			pinned = append(pinned, id)
			continue
		}
		if restarts == len(r.ids) {
			// Should not happen; never loop: send the error.
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = err
			continue
		}
		n.unpinStore(pinned[len(w.readPins):])
		pinned = pinned[:len(w.readPins)]
		if _, ok := n.have(id); ok {
			// Readable again, or replaced by an error: pin from the start.
			restarts++
			i = -1
			continue
		}
		r.done, r.ready[i] = false, false
		r.have--
		n.waiters[id] = append(n.waiters[id], waiter{r: r, i: i})
		n.block(w, r)
		return
	}
	w.readPins = pinned
	n.locate(w, r.ids)
	_ = n.append(w, task.MsgGetReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, r.id)
		b = wire.AppendUvarint(b, uint64(len(r.ids)))
		for i, id := range r.ids {
			o, _ := n.store.Get(id)
			if err := failed[i]; err != nil {
				o = task.Object{Err: &task.TaskError{Function: "(object store)", Message: fmt.Sprintf("object %s: %v", id, err), Cause: err}}
			}
			b = task.AppendObject(b, &o)
		}
		return b
	})
}

// block gives a blocked worker's CPUs back so other tasks (its own
// children, typically) can run; the seeds' nested example needs this to
// finish with one CPU.
func (n *Node) block(w *proc, r *request) {
	if w.actor != nil {
		return // an actor keeps its resources while it waits
	}
	r.counts = true
	r.epoch = n.core.Epoch(w.id)
	n.core.Block(w.id, r.epoch)
	n.step()
}

// Get returns the objects, waiting for those not yet stored.
func (n *Node) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil, ErrShutdown
	}
	r := n.newRequest(nil, 0, oids, len(oids), false)
	done := r.done
	n.unlock()
	if !done {
		select {
		case <-r.ch:
		case <-ctx.Done():
			n.mu.Lock()
			r.done = true
			n.unlock()
			return nil, fmt.Errorf("gray: get: %w", ctx.Err())
		case <-n.done:
			return nil, ErrShutdown
		}
	}
	out := make([]task.Object, len(oids))
	n.mu.Lock()
	for i, id := range oids {
		o, ok := n.store.Get(id)
		if !ok {
			n.unlock()
			return nil, fmt.Errorf("gray: get: object %s vanished", id)
		}
		if o.Shared && o.Err == nil {
			if ch := n.pullLocal(id); ch != nil {
				// On another node: pull it here, then look again.
				n.unlock()
				select {
				case <-ch:
				case <-ctx.Done():
					return nil, fmt.Errorf("gray: get: %w", ctx.Err())
				case <-n.done:
					return nil, ErrShutdown
				}
				return n.Get(ctx, oids)
			}
			// Map it (once per object) and pin it until the program drops
			// its last reference: the decoded slices point into the mapping.
			b, err := n.shared.Get(storeID(id))
			if err != nil {
				if errors.Is(err, objstore.ErrEvicted) {
					// Evicted between readiness and now: rebuild and wait.
					n.have(id)
					n.unlock()
					return n.Get(ctx, oids)
				}
				n.unlock()
				return nil, fmt.Errorf("gray: get: object %s: %w", id, err)
			}
			n.dpins[id]++
			if c := n.dpins[id]; c > 1 {
				// One pin per object is enough: it lasts until the object is freed.
				_ = n.shared.Unpin(storeID(id))
				n.dpins[id] = 1
			}
			o.Data = b
		}
		out[i] = o
	}
	n.unlock()
	return out, nil
}

// Wait returns which of the objects exist once num of them do, or timeout
// (0: none) has passed, or ctx is done.
func (n *Node) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil, ErrShutdown
	}
	r := n.newRequest(nil, 0, oids, num, true)
	done := r.done
	n.unlock()
	if !done {
		var tc <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			tc = t.C
		}
		select {
		case <-r.ch:
		case <-tc:
		case <-ctx.Done():
			n.mu.Lock()
			r.done = true
			n.unlock()
			return nil, fmt.Errorf("gray: wait: %w", ctx.Err())
		case <-n.done:
			return nil, ErrShutdown
		}
	}
	n.mu.Lock()
	defer n.unlock()
	r.done = true
	return append([]bool(nil), r.ready...), nil
}
