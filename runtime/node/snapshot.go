package node

import (
	"context"
	"fmt"
	"sort"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/state"
)

// Snapshot copies the node's state under its lock. It costs time
// proportional to the tasks and actors the node holds.
func (n *Node) Snapshot() state.Snapshot {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := state.Snapshot{Total: n.core.Total(), Available: n.core.Available(), Objects: n.store.Len(), Starting: n.core.Starting()}
	if n.shared != nil {
		s.Shared = n.shared.Stats()
	}
	for _, w := range n.workers {
		tasks := n.core.Sent(w.id)
		ws := state.WorkerState{ID: int(w.id), Name: w.name, PID: w.PID()}
		if w.actor != nil {
			ws.Actor = w.actor.typ
			tasks = w.actor.Inflight()
		}
		for i, p := range tasks {
			st := state.TaskSent
			if i == 0 {
				st = state.TaskRunning
				ws.Running = p.spec.Func
			}
			s.Tasks = append(s.Tasks, state.TaskState{ID: p.spec.ID, Func: p.spec.Func, State: st, Worker: int(w.id)})
		}
		ws.Queued = max(len(tasks)-1, 0)
		s.Workers = append(s.Workers, ws)
	}
	n.core.EachQueued(func(p *pending) {
		s.Tasks = append(s.Tasks, state.TaskState{ID: p.spec.ID, Func: p.spec.Func, State: state.TaskQueued, Worker: -1})
	})
	n.ob.EachWaiting(func(p *pending) {
		s.Tasks = append(s.Tasks, state.TaskState{ID: p.spec.ID, Func: p.spec.Func, State: state.TaskWaiting, Worker: -1})
	})
	for _, a := range n.actors {
		as := state.ActorState{ID: a.id, Type: a.typ, State: "ALIVE", Worker: -1, Pending: len(a.Queued()) + len(a.Inflight()), DirectCallers: n.direct.Callers(a.id)}
		switch {
		case a.Dead():
			as.State = "DEAD"
		case a.w == nil:
			as.State = "PENDING"
		}
		if a.w != nil {
			as.Worker = int(a.w.id)
		}
		for _, p := range a.Queued() {
			s.Tasks = append(s.Tasks, state.TaskState{ID: p.spec.ID, Func: p.spec.Func, State: state.TaskQueued, Worker: -1})
		}
		s.Actors = append(s.Actors, as)
	}
	sort.Slice(s.Workers, func(i, j int) bool { return s.Workers[i].ID < s.Workers[j].ID })
	return s
}

// Events is the node's task event recorder (nil when Config.Events was).
func (n *Node) Events() *events.Recorder { return n.cfg.Events }

// ObjectState is what the node knows of one object (its Object method,
// objects.API.Object).
type ObjectState = objects.ObjectState

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
