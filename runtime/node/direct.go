package node

import (
	"net"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/direct"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Direct actor calls and leases for nested tasks: the driver's wiring.
// runtime/direct decides (who holds which lease, when a caller gets an
// actor's address, which promises break); here its messages are decoded
// into its events and its effects carried out. The workers' side is
// runtime/worker (direct.go, lease.go).

// directTable is the node's runtime/direct table.
type directTable = direct.Table[*proc, *pending]

// handleDirect carries out a message of direct calls and leases from
// worker w (pool.DecodeDirect decoded it).
func (n *Node) handleDirect(w *proc, typ byte, payload []byte) error {
	m, err := pool.DecodeDirect(typ, payload)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.unlockFor(w)
	var ev direct.Event
	switch typ {
	case task.MsgActorAddr:
		n.stepDirect(direct.Ask[*proc]{Caller: w, Req: m.Req, Actor: n.directActor(n.acts.Actor(m.Actor), m.Actor)})
		return nil
	case task.MsgDirectAddr:
		a := w.actor
		ev = direct.Listening[*proc]{Worker: w, Addr: m.Addr, Hosts: a != nil && a.w == w, Actor: n.directActor(a, ids.ActorID{})}
	case task.MsgPromise:
		ev = direct.Promise[*proc]{Worker: w, Object: m.Object, On: m.Promise == task.PromiseOn}
		if m.Promise == task.PromisePublished {
			ev = direct.Published{Object: m.Object}
		}
	case task.MsgDirectDialed:
		ev = direct.Dialed[*proc]{Caller: w, Actor: m.Actor}
	case task.MsgDirectReadsDone:
		n.unpinReads(w)
		return nil
	case task.MsgLease:
		n.grantLease(w, m.Req, m.Res)
		return nil
	case task.MsgLeaseReturn:
		ev = direct.Returned[*proc]{Owner: w, ID: m.Leased}
	case task.MsgOwnerBlocked, task.MsgOwnerUnblocked:
		if w.actor == nil { // an actor keeps its resources, as in a Get
			if typ == task.MsgOwnerBlocked {
				n.core.Step(sched.Blocked{W: w.id, Epoch: n.core.Epoch(w.id)})
			} else {
				// The task goes on at once; if its CPUs are still lent,
				// the books take them back when free (Resume), a short
				// oversubscription, as in Ray.
				n.core.Step(sched.Unblocked{W: w.id, Epoch: n.core.Epoch(w.id)})
			}
			n.step()
		}
		return nil
	default:
		return nil
	}
	if n.stepDirect(ev) {
		n.step()
	}
	return nil
}

// grantLease asks the scheduling core for a lease for owner's request rid.
func (n *Node) grantLease(owner *proc, rid uint64, res *task.Resources) {
	if n.closed || owner.dead {
		n.stepDirect(direct.Refused[*proc]{Owner: owner, Req: rid})
		return
	}
	p := &pending{spec: &task.Spec{ID: ids.Root(0, false), Kind: task.KindFunc, Func: "(lease of " + owner.name + ")"}}
	id, ok := n.core.Lease(p, res)
	if !ok {
		n.stepDirect(direct.Refused[*proc]{Owner: owner, Req: rid})
		return
	}
	w := n.workers[id]
	n.stepDirect(direct.Granted[*proc, *pending]{Owner: owner, Req: rid, Lease: p, ID: id, Worker: w, Up: w != nil && !w.dead})
}

// answerDirect tells the direct table that actor a changed: its worker
// connected or returned a result, or it died.
func (n *Node) answerDirect(a *actor) {
	n.stepDirect(direct.Changed[*proc]{Actor: n.directActor(a, a.id)})
}

// directActor is what the direct table is told of actor a (nil: unknown,
// id).
func (n *Node) directActor(a *actor, id ids.ActorID) direct.Actor[*proc] {
	if a == nil {
		return direct.Actor[*proc]{ID: id}
	}
	return direct.Actor[*proc]{ID: a.id, Direct: n.acts.Direct(a), Worker: a.w, Up: a.w != nil && a.w.Connected(), Constructed: a.Constructed()}
}

// stepDirect steps the direct table and carries out its effects. It
// reports whether a lease ended (the core has resources to hand out: the
// caller steps it, unless it is in the middle of a worker's death).
func (n *Node) stepDirect(ev direct.Event) (ended bool) {
	n.direct.Step(ev)
	for _, e := range n.direct.Effects() {
		switch e.Kind {
		case direct.ReplyAddr:
			_ = n.append(e.To, task.MsgActorAddrReply, func(b []byte) []byte {
				b = wire.AppendUvarint(b, e.Req)
				return wire.AppendString(b, e.Addr)
			})
		case direct.Listen:
			_ = n.append(e.To, task.MsgDirectListen, nil)
		case direct.ReplyLease:
			_ = n.append(e.To, task.MsgLeaseReply, func(b []byte) []byte {
				b = wire.AppendUvarint(b, e.Req)
				b = wire.AppendUvarint(b, uint64(e.ID))
				return wire.AppendString(b, e.Addr)
			})
		case direct.EndLease:
			if run, ok := n.core.Running(e.ID); ok && run == e.Lease {
				n.waits.TaskEnded(e.ID) // a Get of a leased task outlived the lease
				n.core.Step(sched.TaskDone{W: e.ID, Retiring: false})
			}
			ended = true
		case direct.Claim:
			n.ob.Contain(e.Object, e.Children)
		case direct.Drain: // a drain that waited for its callers to dial (drainDirect)
			_ = n.append(e.To, task.MsgDirectDrain, nil) // (a connection gone ends the process anyway)
		case direct.Break:
			n.ob.BreakPromise(e.Object, &task.TaskError{Function: "(owned result)", Worker: e.To.name,
				Message: "the worker that owned this result (a direct call's or a leased task's) died before it arrived", Cause: task.ErrWorkerDied})
		}
	}
	return ended
}

// drainDirect reports whether dead actor a's process, about to stop, is
// drained instead: released while direct callers held its address, it
// exits once their calls on the wire ran (runtime/direct, drain.go). The
// drain starts now, or once the callers given the address have all
// dialled it or died (stepDirect sends it then).
func (n *Node) drainDirect(a *actor) bool {
	n.direct.Step(direct.Stopping[*proc]{Actor: n.directActor(a, a.id), Released: a.Draining() && !a.Killed()})
	for _, e := range n.direct.Effects() { // Drain, DrainLater, or none
		switch e.Kind {
		case direct.Drain:
			return n.append(e.To, task.MsgDirectDrain, nil) == nil
		case direct.DrainLater:
			return true
		}
	}
	return false
}

// directHostEnv is the environment that makes the workers of cluster
// driver c on its machine take direct calls from other nodes too
// (task.EnvDirectHost): the host its workers dial, unless that is
// unspecified (0.0.0.0), which names no machine to other nodes.
func directHostEnv(c *cluster.DriverNode) []string {
	addr := c.Advertise
	if addr == "" {
		addr = c.Listen
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		return nil
	}
	return []string{task.EnvDirectHost + "=" + host}
}

// newDirect returns the node's direct table, which asks ob about objects.
func newDirect(ob direct.Objects) *directTable {
	return direct.New[*proc, *pending](directWorkers{}, ob)
}

// ownerGone tells the direct table that worker w's process ended: the
// leases it owned end and its promises break.
func (n *Node) ownerGone(w *proc) { _ = n.stepDirect(direct.Gone[*proc]{Worker: w}) }

// leaseOrphaned reports whether p, a task the core orphaned, is a lease
// (its worker died); the owner resends what had no result through the
// driver.
func (n *Node) leaseOrphaned(p *pending) bool {
	if !n.direct.IsLease(p) {
		return false
	}
	n.stepDirect(direct.Orphaned[*pending]{Lease: p})
	return true
}

// contain records that object parent's value holds references to
// children (MsgContain), unless it is a direct call's result freed before
// this came (runtime/direct, contains.go).
func (n *Node) contain(parent ids.ObjectID, children []ids.ObjectID) {
	n.stepDirect(direct.Contain{Parent: parent, Children: children})
}

// directWorkers is what the direct table asks of the node's workers.
type directWorkers struct{}

func (directWorkers) Dead(w *proc) bool           { return w == nil || w.dead }
func (directWorkers) ID(w *proc) sched.WorkerID   { return w.id }
func (directWorkers) SameMachine(a, b *proc) bool { return a.node == b.node }
