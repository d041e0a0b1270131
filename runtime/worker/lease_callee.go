package worker

import (
	"time"

	"github.com/gray-ml/gray/runtime/sched"
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
	w.flushHeld() // what it waits for may be among them
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

// holdResult reports whether the result of leased task s, appended to c,
// may wait for the next one's: the next queued task is c's too and its
// function ran shorter than sched.PackShort last time. A burst of short
// tasks then sends its results in few writes and wakes the owner a few
// times, not once per task, as the driver batches what it sends a worker.
// The held results go out with the next result sent, before a task runs
// that is not c's, and before the running task waits in Get or Wait (it
// may wait for one of them).
func (w *Worker) holdResult(s *task.Spec, c *directConn, ran time.Duration) bool {
	if !c.lease {
		return false
	}
	if w.callee.runs == nil {
		w.callee.runs = map[string]time.Duration{}
	}
	w.callee.runs[s.Func] = ran
	w.mu.Lock()
	hold := len(w.queue) > 0 && w.callee.origins[w.queue[0]] == c
	next := ""
	if hold {
		next = w.queue[0].Func
	}
	w.mu.Unlock()
	if d, ok := w.callee.runs[next]; !hold || !ok || d >= sched.PackShort {
		w.callee.held = nil
		return false
	}
	w.callee.held = c
	return true
}

// flushHeld sends the lease results held back by holdResult.
func (w *Worker) flushHeld() {
	if c := w.callee.held; c != nil {
		w.callee.held = nil
		_ = c.Flush()
	}
}
