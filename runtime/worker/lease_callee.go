package worker

import (
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// A leased worker's side of leases (lease.go has the owner's). Its owner
// sends tasks over a direct connection; they run in the worker's one queue
// and their results go back there (runDirect). Two things differ from an
// actor's direct calls: a leased task that waits in Get or Wait hands the
// tasks queued behind it back to their owners (one of them may be what it
// waits for), as a pool worker does for the driver's Recall, and so does
// every lease task that arrives while it waits; and the tasks of a lease
// whose connection ended (its owner died or returned it) are dropped.

// blockLeased runs wait, a Get or Wait of the running task asked of the
// driver; if that task is leased, the lease tasks queued here go back to
// their owners first, and those arriving meanwhile go back at once.
func (w *Worker) blockLeased(wait func()) {
	if !w.callee.leased.Load() {
		wait()
		return
	}
	w.callee.blocked.Store(true)
	back := map[*directConn][]*task.Spec{}
	w.mu.Lock()
	keep := w.queue[:0]
	for _, s := range w.queue {
		if c := w.callee.origins[s]; c != nil && c.lease {
			delete(w.callee.origins, s)
			back[c] = append(back[c], s)
			continue
		}
		keep = append(keep, s)
	}
	clear(w.queue[len(keep):])
	w.queue = keep
	w.mu.Unlock()
	for c, ss := range back {
		giveBackTo(c, ss)
	}
	wait()
	w.callee.blocked.Store(false)
}

// giveBackTo hands tasks ss back to the owner of lease connection c.
func giveBackTo(c *directConn, ss []*task.Spec) {
	_ = c.Send(task.MsgGiveBack, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(ss)))
		for _, s := range ss {
			b = append(b, s.ID[:]...)
		}
		return b
	})
}

// leaseConnEnded drops the queued tasks of lease connection c, which
// ended: nobody waits for their results.
func (w *Worker) leaseConnEnded(c *directConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := w.queue[:0]
	for _, s := range w.queue {
		if w.callee.origins[s] == c {
			delete(w.callee.origins, s)
			continue
		}
		keep = append(keep, s)
	}
	clear(w.queue[len(keep):])
	w.queue = keep
}
