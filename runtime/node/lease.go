package node

import (
	"fmt"
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Leases for nested tasks: the driver's part (the worker's is
// runtime/worker/lease.go, the books sched/lease.go). A worker asks for a
// lease (MsgLease) with the resources of the tasks it submits; the core
// grants one only if an idle pool worker and the resources are free now,
// else the answer is "no" at once and the asker submits through the
// driver as before, so a lease never waits and never deadlocks. The
// leased worker is asked to listen (MsgDirectListen, as a callee of direct
// calls is) and its address goes back to the owner, who sends it tasks
// over its own connection until it returns the lease (MsgLeaseReturn).
//
// Endings: the owner's process dies (its leases end here: ownerGone); the
// leased worker dies (the core orphans the lease: leaseOrphaned; the owner
// sees its connection end and sends the unfinished tasks through the
// driver).

// lease is one lease the core granted.
type lease struct {
	p        *pending // the lease as the core's running task on w
	owner    *proc
	rid      uint64         // the owner's request, until answered
	id       sched.WorkerID // the leased worker
	answered bool
}

// handleLease decodes the lease messages of worker w.
func (n *Node) handleLease(w *proc, typ byte, d *wire.Dec) error {
	switch typ {
	case task.MsgLease:
		rid := d.Uvarint()
		res := task.DecodeResources(d)
		if d.Err != nil || res == nil {
			return fmt.Errorf("malformed lease request: %w", d.Err)
		}
		n.mu.Lock()
		n.grantLease(w, rid, res)
		n.unlockFor(w)
	case task.MsgLeaseReturn:
		id := sched.WorkerID(d.Uvarint())
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		if l := n.direct.leased[id]; l != nil && l.owner == w {
			n.endLease(l)
			n.step()
		}
		n.unlockFor(w)
	case task.MsgOwnerBlocked, task.MsgOwnerUnblocked:
		n.mu.Lock()
		if w.actor == nil { // an actor keeps its resources, as in a Get
			if typ == task.MsgOwnerBlocked {
				n.core.Block(w.id, n.core.Epoch(w.id))
			} else {
				// The task goes on at once; if its CPUs are still lent,
				// the books take them back when free (Resume), a short
				// oversubscription, as in Ray.
				n.core.Unblock(w.id, n.core.Epoch(w.id))
			}
			n.step()
		}
		n.unlockFor(w)
	}
	return nil
}

// grantLease asks the core for a lease for owner and, if granted, asks the
// leased worker where it listens; the owner is answered then (leaseAddr).
func (n *Node) grantLease(owner *proc, rid uint64, res *task.Resources) {
	if n.closed || owner.dead {
		n.replyLease(owner, rid, 0, "")
		return
	}
	p := &pending{spec: &task.Spec{ID: ids.Root(0, false), Kind: task.KindFunc, Func: "(lease of " + owner.name + ")"}}
	id, ok := n.core.Lease(p, res)
	if !ok {
		n.replyLease(owner, rid, 0, "")
		return
	}
	w := n.workers[id]
	l := &lease{p: p, owner: owner, rid: rid, id: id}
	if n.direct.leased == nil {
		n.direct.leased = map[sched.WorkerID]*lease{}
		n.direct.leases = map[*pending]*lease{}
	}
	n.direct.leased[id], n.direct.leases[p] = l, l
	if w == nil || w.dead {
		// The core hands out connected workers only, and a death reaches
		// it and this table under the same lock.
		n.endLease(l)
		return
	}
	_ = n.append(w, task.MsgDirectListen, nil)
}

// leaseAddr answers the owner of the lease on w, which said where it
// listens (MsgDirectAddr); it reports whether w is leased.
func (n *Node) leaseAddr(w *proc, addr string) bool {
	l := n.direct.leased[w.id]
	if l == nil {
		return false
	}
	if l.answered {
		return true
	}
	l.answered = true
	if addr == "" || !strings.HasPrefix(addr, "tcp:") && l.owner.node != w.node {
		// It could not listen, or on a Unix socket of another machine
		// than the owner's: no lease.
		n.replyLease(l.owner, l.rid, 0, "")
		n.endLease(l)
		n.step()
		return true
	}
	n.replyLease(l.owner, l.rid, uint64(w.id), addr)
	return true
}

// endLease ends lease l: its worker is idle again (or takes queued tasks)
// and the resources are free.
func (n *Node) endLease(l *lease) {
	delete(n.direct.leased, l.id)
	delete(n.direct.leases, l.p)
	if !l.answered {
		l.answered = true
		n.replyLease(l.owner, l.rid, 0, "")
	}
	if run, ok := n.core.Running(l.id); ok && run == l.p {
		n.waits.TaskEnded(l.id) // a Get of a leased task outlived the lease
		n.core.TaskDone(l.id, false)
	}
}

// leaseOrphaned reports whether p, a task the core orphaned, is a lease:
// its worker died. The owner sees the connection end and sends what had
// no result through the driver.
func (n *Node) leaseOrphaned(p *pending) bool {
	l := n.direct.leases[p]
	if l == nil {
		return false
	}
	delete(n.direct.leased, l.id)
	delete(n.direct.leases, p)
	if !l.answered {
		l.answered = true
		n.replyLease(l.owner, l.rid, 0, "")
	}
	return true
}

// ownerGone ends the leases worker w held, whose process ended, and breaks
// its promises (direct.go).
func (n *Node) ownerGone(w *proc) {
	n.promisesGone(w)
	for _, l := range n.direct.leased {
		if l.owner == w {
			n.endLease(l)
		}
	}
}

// replyLease answers lease request rid of w.
func (n *Node) replyLease(w *proc, rid, id uint64, addr string) {
	if w.dead {
		return
	}
	_ = n.append(w, task.MsgLeaseReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = wire.AppendUvarint(b, id)
		return wire.AppendString(b, addr)
	})
}
