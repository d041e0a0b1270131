package node

import (
	"context"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/requests"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Get and Wait: the requests of the driver and its workers are the
// requests table's (runtime/requests, Node.reqs), matched by sched.Waits
// (Node.waits); the node answers for its workers (askers).

// request is a Get or Wait as the requests table records it.
type request = requests.Request[*proc]

// Get returns the objects, waiting for those not yet stored
// (requests.Table.Get).
func (n *Node) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	return n.reqs.Get(ctx, oids)
}

// Wait returns which of the objects exist once num of them do, or timeout
// (0: none) has passed, or ctx is done (requests.Table.Wait).
func (n *Node) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	return n.reqs.Wait(ctx, oids, num, timeout)
}

// askers is the node as the requests table's requests.Workers.
type askers struct{ n *Node }

func (a askers) Dead(w *proc) bool                              { return w.dead }
func (a askers) Holder(w *proc) objtable.Holder                 { return workerHolder(w) }
func (a askers) Send(w *proc, typ byte, fn func([]byte) []byte) { _ = a.n.append(w, typ, fn) }
func (a askers) Locate(w *proc, oids []ids.ObjectID)            { a.n.locate(w, oids) }
func (a askers) HelpFor(oids []ids.ObjectID) func(func() bool) {
	if w := a.n.helpFor(oids); w != nil {
		return w.Help
	}
	return nil
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
