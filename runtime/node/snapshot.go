package node

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// Snapshot copies the node's state under its lock (state.Builder says
// how each record reads). It costs time proportional to the tasks and
// actors the node holds.
func (n *Node) Snapshot() state.Snapshot {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := state.NewBuilder(func(p *pending) *task.Spec { return p.spec }, n.core.Total(), n.core.Available(), n.core.Starting(), n.store.Len())
	if n.shared != nil {
		b.Shared(n.shared.Stats())
	}
	for _, w := range n.workers {
		ws, sent := state.WorkerState{ID: int(w.id), Name: w.name, PID: w.PID()}, n.core.Sent(w.id)
		if w.actor != nil {
			ws.Actor, sent = w.actor.typ, w.actor.Inflight()
		}
		b.Worker(ws, sent)
	}
	n.core.EachQueued(func(p *pending) { b.Task(p, state.TaskQueued) })
	n.ob.EachWaiting(func(p *pending) { b.Task(p, state.TaskWaiting) })
	for a := range n.acts.Actors() {
		worker := -1
		if a.w != nil {
			worker = int(a.w.id)
		}
		b.Actor(state.ActorState{ID: a.id, Type: a.typ, DirectCallers: n.direct.Callers(a.id), DirectAsking: n.direct.Asking(a.id)}, a.Dead(), worker, a.Queued(), len(a.Inflight()))
	}
	return b.Snapshot()
}

// Events is the node's task event recorder (nil when Config.Events was).
func (n *Node) Events() *events.Recorder { return n.cfg.Events }

// Stacks returns the goroutine dump of worker id, a process of this
// machine (pool.Pool.Stacks), waiting for it for ctx or the worker's end.
func (n *Node) Stacks(ctx context.Context, id int) (string, error) {
	n.mu.Lock()
	w := n.workers[sched.WorkerID(id)]
	n.mu.Unlock()
	if w == nil {
		return "", fmt.Errorf("gray: worker %d is not running in this session", id)
	}
	return n.pool.Stacks(ctx, w.Worker)
}

// LogDir is where workers write their output (worker-N.out and .err); ""
// when it goes to the driver's output instead.
func (n *Node) LogDir() string { return n.cfg.LogDir }
