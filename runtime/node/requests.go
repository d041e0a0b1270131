package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// newRequest registers a Get (need = len) or Wait request with the matching
// core (sched.Waits); its answer comes out of step.
func (n *Node) newRequest(w *proc, id uint64, oids []ids.ObjectID, need int, wait bool) *request {
	r := &request{w: w, id: id, wait: wait, ids: oids}
	if w == nil {
		r.ch = make(chan struct{})
	}
	q := sched.Request[*request]{Payload: r, Worker: sched.NoWorker, Objects: oids, Ready: make([]bool, len(oids)), Need: need}
	if w != nil {
		// A pool worker's task lends its CPUs while it waits (Ray 0.2's
		// nested example needs this to finish with one CPU); an actor
		// keeps its resources.
		q.Worker, q.Lends = w.id, w.actor == nil
	}
	for i, o := range oids {
		if _, ok := n.have(o); ok {
			q.Ready[i] = true
		}
	}
	r.rq = n.waits.Add(q)
	n.step()
	return r
}

// answer carries out an answer of the matching core: a driver request's
// channel closes; a worker gets its reply.
func (n *Node) answer(a sched.Answer[*request]) {
	r := a.Payload
	if r.timer != nil {
		r.timer.Stop()
	}
	r.ready = a.Ready
	if r.w == nil {
		if !r.done {
			r.done = true
			close(r.ch)
		}
		return
	}
	if r.w.dead {
		return
	}
	n.reply(r, a)
}

func (n *Node) reply(r *request, a sched.Answer[*request]) {
	w := r.w
	if r.wait {
		_ = n.append(w, task.MsgWaitReply, func(b []byte) []byte { return pool.AppendWaitReply(b, r.id, r.ready) })
		return
	}
	// Pin the shared objects until the worker's task ends, so its mappings
	// stay valid. One evicted since it became ready (rare: between
	// readiness and this reply) is rebuilt from its lineage and the request
	// waits for it again, as if it had not been ready (sched.Waits.Reopen);
	// one that cannot be rebuilt has been replaced by an error saying why,
	// which is sent.
	h := objtable.WorkerHolder(int(w.id))
	var pinned []ids.ObjectID // by this reply: objtable.ReadPin, until the task ends
	restarts := 0
	var failed map[int]error
	for i := 0; i < len(r.ids); i++ {
		id := r.ids[i]
		o, ok := n.store.Get(id)
		if !ok || !o.Shared || o.Err != nil || n.remoteOnly(id) {
			continue // a remote one: the worker pulls it (locate)
		}
		err := n.pin(h, id, objtable.ReadPin)
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
		for _, id := range pinned {
			n.unpinOne(h, id, objtable.ReadPin)
		}
		pinned = pinned[:0]
		if _, ok := n.have(id); ok {
			// Readable again, or replaced by an error: pin from the start.
			restarts++
			i = -1
			continue
		}
		n.waits.Reopen(a, i)
		return
	}
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

// Get returns the objects, waiting for those not yet stored.
func (n *Node) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil, ErrShutdown
	}
	r := n.newRequest(nil, 0, oids, len(oids), false)
	done := r.done
	var help *proc
	if !done {
		help = n.helpFor(oids)
	}
	n.unlock()
	if !done {
		if help != nil {
			help.Help(r.answered)
		}
		select {
		case <-r.ch:
		case <-ctx.Done():
			n.mu.Lock()
			n.waits.Drop(r.rq)
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
			// Map it (once per object) and pin it against eviction until
			// the program drops its last reference. The decoded slices
			// point into the mapping, which the store lays over a Go heap
			// allocation: they keep it valid on their own, after the
			// object is freed too (objstore, "Lifetime of the owner's
			// slices").
			b, err := n.shared.Get(storeID(id))
			if err != nil {
				if errors.Is(err, objstore.ErrEvicted) || errors.Is(err, objstore.ErrNotFound) {
					// Evicted between readiness and now, or lost with the
					// node that held it (NodeGone dropped the holder after
					// the request was answered): rebuild and wait.
					n.have(id)
					n.unlock()
					return n.Get(ctx, oids)
				}
				n.unlock()
				return nil, fmt.Errorf("gray: get: object %s: %w", id, err)
			}
			if n.objs.Claims(id, objtable.DriverPin) > 0 {
				// One pin per object is enough: it lasts until the object is freed.
				_ = n.shared.Unpin(storeID(id))
			} else {
				n.objs.Claim(objtable.Holder{}, id, objtable.DriverPin)
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
			n.waits.Drop(r.rq)
			n.unlock()
			return nil, fmt.Errorf("gray: wait: %w", ctx.Err())
		case <-n.done:
			return nil, ErrShutdown
		}
	}
	n.mu.Lock()
	defer n.unlock()
	n.waits.Timeout(r.rq) // answers it now, unless it was answered already
	n.step()
	return append([]bool(nil), r.ready...), nil
}

// helpFor returns the worker whose connection a Get of oids should read
// itself (pool.Worker.Help), or nil: the local worker the last task was
// sent to, if it runs (or, for an actor, was last sent) the task that
// makes the last of the objects. The caller holds mu.
func (n *Node) helpFor(oids []ids.ObjectID) *proc {
	w := n.lastExec
	if w == nil || w.dead || !w.CanHelp() || len(oids) == 0 {
		return nil
	}
	tid := oids[len(oids)-1].Task()
	if a := w.actor; a != nil {
		if k := len(a.inflight); k > 0 && a.inflight[k-1].spec.ID == tid {
			return w
		}
		return nil
	}
	if run, ok := n.core.Running(w.id); ok && w.node == sched.Local && run.spec.ID == tid {
		return w
	}
	return nil
}

// answered reports whether a driver request was answered. It reads the
// channel answer closes, so it needs no lock.
func (r *request) answered() bool {
	select {
	case <-r.ch:
		return true
	default:
		return false
	}
}
