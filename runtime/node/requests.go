package node

import (
	"context"
	"fmt"
	"github.com/gray-ml/gray/runtime/objects"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
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
		if _, ok := n.ob.Have(o); ok {
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
	// stay valid; one evicted since it became ready makes the request wait
	// for it again (objects.Keeper.PinRead).
	i, failed := n.ob.PinRead(workerHolder(w), r.ids)
	if i >= 0 {
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
				o = objects.ReadError(id, err)
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
		o, again, err := n.ob.Read(id)
		if err != nil {
			n.unlock()
			return nil, fmt.Errorf("gray: get: %w", err)
		}
		if again != nil {
			// On another node (pulled here now), or evicted or lost since
			// it was ready (rebuilt now): look again once it is here.
			n.unlock()
			select {
			case <-again:
			case <-ctx.Done():
				return nil, fmt.Errorf("gray: get: %w", ctx.Err())
			case <-n.done:
				return nil, ErrShutdown
			}
			return n.Get(ctx, oids)
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
		if in := a.Inflight(); len(in) > 0 && in[len(in)-1].spec.ID == tid {
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
