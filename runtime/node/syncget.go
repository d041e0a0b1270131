package node

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
)

// A synchronous call from the driver: the program's goroutine submits a
// task and waits in Get for its result. If the connection's reader (serve)
// handled the result and woke the waiting goroutine, the Go scheduler
// would wake a second thread for it at every call. Instead the waiting
// goroutine reads the result itself: wire.Conn.Help lets it take the
// connection's reading role and spin on the shared-memory ring for the
// answer, handling what it finds with the same handler as serve
// (proc.handler), until its request is answered (or the spin gives up,
// and it waits as before).

// badMessage is a worker's message the node could not handle: serve
// reports it and ends the connection.
type badMessage struct{ err error }

func (b badMessage) Error() string { return b.err.Error() }
func (b badMessage) Unwrap() error { return b.err }

// helpFor returns the worker whose connection a Get of oids should read
// itself, or nil: the local worker the last task was sent to, if it runs
// (or, for an actor, was last sent) the task that makes the last of the
// objects. The caller holds mu.
func (n *Node) helpFor(oids []ids.ObjectID) *proc {
	w := n.lastExec
	if w == nil || w.dead || w.conn == nil || w.handler == nil || !w.conn.Shared() || len(oids) == 0 {
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

// help reads w's connection on the calling goroutine until r is answered
// or w returned a result (the one r waits for, or one ahead of it: then r
// waits as usual, not for a whole other task).
func (n *Node) help(w *proc, r *request) {
	seen := w.finished.Load()
	w.conn.Help(w.handler, func() bool { return r.answered() || w.finished.Load() != seen })
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
