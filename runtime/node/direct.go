package node

import (
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Direct actor calls: the driver's part (the worker's is
// runtime/worker/direct.go). An actor's worker that calls another actor
// asks here once where the callee takes direct calls (MsgActorAddr); the
// driver asks the callee's worker to listen (MsgDirectListen, once per
// actor) and answers once the actor is constructed and its address known.
// Calls and results then bypass the driver, so its lock sees none of them.
//
// Only actors whose calls the driver need not see are called directly:
// not one that may be restarted (its replay log is kept here, restart.go),
// nor one that checkpoints. The answer "" sends the caller through the
// driver, for good: switching paths later could reorder its calls.

// directTable is the driver's state of direct calls, under Node.mu.
type directTable struct {
	actors map[ids.ActorID]*directActor
	// Leases for nested tasks (lease.go): by leased worker, and by the
	// core's task that stands for each.
	leased map[sched.WorkerID]*lease
	leases map[*pending]*lease
	// promised are the objects each worker said it will put (MsgPromise).
	promised map[*proc]*promises
}

// promises are the results a worker owns and promised to put, by the
// number of sweeps before the promise came.
type promises struct {
	ids     map[ids.ObjectID]int
	sweeps  int
	sweepAt int // len(ids) that starts the next sweep
}

// directActor is what the driver knows of one actor's direct address.
type directActor struct {
	addr    string // where its worker listens ("": it could not)
	asked   bool   // MsgDirectListen was sent to its worker
	said    bool   // the worker answered it (MsgDirectAddr)
	waiters []directWaiter
}

// directWaiter is a caller waiting for the address.
type directWaiter struct {
	w   *proc
	rid uint64
}

// handleDirect decodes the messages of direct calls from worker w.
func (n *Node) handleDirect(w *proc, typ byte, d *wire.Dec) error {
	switch typ {
	case task.MsgActorAddr:
		rid := d.Uvarint()
		var id ids.ActorID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.lookupDirect(w, rid, id)
		n.unlockFor(w)
	case task.MsgDirectAddr:
		addr := d.String()
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		if n.leaseAddr(w, addr) {
			// a leased worker (lease.go)
		} else if a := w.actor; a != nil && a.w == w {
			st := n.directOf(a)
			st.addr, st.said = addr, true
			n.answerDirect(a)
		}
		n.unlockFor(w)
	case task.MsgPromise:
		on := d.Byte() == 1
		var id ids.ObjectID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.promise(w, id, on)
		n.unlockFor(w)
	case task.MsgDirectReadsDone:
		n.mu.Lock()
		n.unpinReads(w)
		n.unlockFor(w)
	case task.MsgLease, task.MsgLeaseReturn, task.MsgOwnerBlocked, task.MsgOwnerUnblocked:
		return n.handleLease(w, typ, d)
	}
	return nil
}

// directOf returns a's entry in the table, making it.
func (n *Node) directOf(a *actor) *directActor {
	if n.direct.actors == nil {
		n.direct.actors = map[ids.ActorID]*directActor{}
	}
	st := n.direct.actors[a.id]
	if st == nil {
		st = &directActor{}
		n.direct.actors[a.id] = st
	}
	return st
}

// lookupDirect registers w's question about actor id and answers it if it
// can now.
func (n *Node) lookupDirect(w *proc, rid uint64, id ids.ActorID) {
	a := n.actors[id]
	if a == nil || !directable(a) {
		n.replyDirect(w, rid, "")
		return
	}
	st := n.directOf(a)
	st.waiters = append(st.waiters, directWaiter{w: w, rid: rid})
	n.answerDirect(a)
}

// directable reports whether a's calls may bypass the driver.
func directable(a *actor) bool {
	if a.Dead() || a.Draining() || a.Restartable() {
		return false
	}
	e, err := task.Lookup(a.typ)
	return err == nil && e.CheckpointInterval == 0
}

// answerDirect answers the callers waiting for a's address when it can:
// once a's worker is connected and has run its creation task, and has
// said where it listens. It runs on each event that may allow that: a
// question, the worker's address, each result of a's worker (its
// constructor's among them) and a's death.
func (n *Node) answerDirect(a *actor) {
	st := n.direct.actors[a.id]
	if st == nil {
		return
	}
	if a.Dead() || !directable(a) {
		for _, q := range st.waiters {
			n.replyDirect(q.w, q.rid, "")
		}
		delete(n.direct.actors, a.id)
		return
	}
	if len(st.waiters) == 0 || a.w == nil || !a.w.Connected() {
		return
	}
	if !st.asked {
		st.asked = true
		_ = n.append(a.w, task.MsgDirectListen, nil)
	}
	if !st.said || !constructed(a) {
		return
	}
	for _, q := range st.waiters {
		addr := st.addr
		if !strings.HasPrefix(addr, "tcp:") && q.w.node != a.w.node {
			addr = "" // a Unix socket on another machine
		}
		n.replyDirect(q.w, q.rid, addr)
	}
	st.waiters = nil
}

// constructed reports whether a's worker has run its creation task: no
// creation or restore is queued or in flight.
func constructed(a *actor) bool {
	for _, ps := range [][]*pending{a.Queued(), a.Inflight()} {
		for _, p := range ps {
			if k := p.spec.Kind; k == task.KindActorCreate || k == task.KindActorRestore {
				return false
			}
		}
	}
	return true
}

// replyDirect answers request rid of worker w with addr.
func (n *Node) replyDirect(w *proc, rid uint64, addr string) {
	if w.dead {
		return
	}
	_ = n.append(w, task.MsgActorAddrReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		return wire.AppendString(b, addr)
	})
}

// promise records (on) or withdraws worker w's promise to put object id.
// Kept promises are swept once their count doubles: those put since, or
// no longer awaited and older than the last sweep (a promise precedes the
// message that claims the object, so a new one may be unclaimed yet).
func (n *Node) promise(w *proc, id ids.ObjectID, on bool) {
	ps := n.direct.promised[w]
	if !on {
		if ps != nil {
			delete(ps.ids, id)
		}
		return
	}
	if w.dead {
		return
	}
	if ps == nil {
		if n.direct.promised == nil {
			n.direct.promised = map[*proc]*promises{}
		}
		ps = &promises{ids: map[ids.ObjectID]int{}, sweepAt: 64}
		n.direct.promised[w] = ps
	}
	ps.ids[id] = ps.sweeps
	if len(ps.ids) < ps.sweepAt {
		return
	}
	for x, at := range ps.ids {
		if at < ps.sweeps && !n.ob.Promised(x) || n.ob.Stored(x) {
			delete(ps.ids, x)
		}
	}
	ps.sweeps++
	ps.sweepAt = max(64, 2*len(ps.ids))
}

// promisesGone breaks the promises of worker w, whose process ended: what
// waits for those objects gets an error.
func (n *Node) promisesGone(w *proc) {
	ps := n.direct.promised[w]
	if ps == nil {
		return
	}
	delete(n.direct.promised, w)
	for id := range ps.ids {
		n.ob.BreakPromise(id, &task.TaskError{Function: "(owned result)", Worker: w.name,
			Message: "the worker that owned this result (a direct call's or a leased task's) died before it arrived", Cause: task.ErrWorkerDied})
	}
}
