package node

import (
	"errors"
	"fmt"
	"net"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The node's glue to its objects part (runtime/objects, Node.ob): on an
// event it asks the Keeper, which decides and carries out what concerns
// objects; what concerns tasks comes back through objectTasks.

// MaxRebuilds is how many times in a row rebuilding an object from its
// lineage may fail (its task failed, or its worker died) before the object
// is lost for good (task.ErrLostRetriesExhausted). A rebuild that failed
// for want of room in the object store does not count: it is retried once
// there is room.
const MaxRebuilds = recovery.DefaultRebuilds

// maxRetries bounds how often a task whose remote worker or node died is
// run again elsewhere.
const maxRetries = recovery.DefaultRuns

// ObjectStats counts the movement of a cluster driver's objects.
type ObjectStats = objects.Stats

// RemoteObjects is the part of a Remote that moves objects (cluster.Driver
// implements it). Its methods must not block.
type RemoteObjects = objects.RemoteObjects

// objectTasks is the node as the Keeper's objects.Tasks.
type objectTasks struct{ n *Node }

func (t objectTasks) Waited(id ids.ObjectID) bool {
	return len(t.n.waiters[id]) > 0 || t.n.waits.Waiting(id)
}

// Stored wakes the Gets, Waits and tasks waiting for id.
func (t objectTasks) Stored(id ids.ObjectID, o task.Object) {
	n := t.n
	if n.waits.Waiting(id) {
		n.waits.Stored(id)
		n.step()
	}
	ws, ok := n.waiters[id]
	if !ok {
		return
	}
	delete(n.waiters, id)
	for _, w := range ws {
		p := w.p
		if o.Err != nil && p.failed == nil {
			p.failed = o.Err
		}
		p.missing--
		n.ob.PinArg(p.spec.ID, id, o)
		if p.missing == 0 {
			if p.actor != nil {
				n.pump(p.actor)
			} else {
				n.ready(p)
			}
		}
	}
}

// Apply carries out an effect of the recovery core on tasks and workers.
func (t objectTasks) Apply(e recovery.Effect[*pending]) {
	n := t.n
	switch e.Kind {
	case recovery.GiveUp:
		n.ctrl.AddError(e.Err)
		n.errQ = append(n.errQ, e.Err)
	case recovery.Resubmit:
		_ = n.submitLocked(e.Spec)
	case recovery.Rerun:
		if p := e.Task; e.Refetch {
			n.refetchArgs(p, true)
		} else if !n.refetchArgs(p, false) {
			n.core.Submit(p, &p.entry.Res, false)
		}
	case recovery.Fail:
		n.finishErr(e.Task, &task.TaskError{Function: e.Task.spec.Func, Message: e.Message, Cause: task.ErrWorkerDied})
	case recovery.StopSpawning:
		n.stopSpawning(e.Count, e.Message)
	case recovery.DropNode:
		go n.NodeGone(e.Node, e.Message)
	}
}

// stopSpawning stops starting workers once count in a row exited before
// connecting (the last: why), and fails what waits for one.
func (n *Node) stopSpawning(count int, why string) {
	n.spawnErr = fmt.Errorf("gray: %d worker processes in a row exited before connecting to the driver (last: %s); "+
		"the program must call gray.ServeIfWorker() first thing in main (in TestMain for tests) so that it serves tasks when started as a worker", count, why)
	n.core.SpawnFailed() // what waits comes back as Refuse effects
	n.step()
}

// Calls the worker side makes (procs.go, requests.go, remote.go), each
// carried out by the Keeper.

func (n *Node) recover(ev recovery.Event) []recovery.Effect[*pending] { return n.ob.Recover(ev) }
func (n *Node) have(id ids.ObjectID) (task.Object, bool)              { return n.ob.Have(id) }
func (n *Node) putLocked(id ids.ObjectID, o task.Object)              { n.ob.Put(id, o) }
func (n *Node) drop(h objtable.Holder, id ids.ObjectID)               { n.ob.Drop(h, id) }
func (n *Node) freeNow(id ids.ObjectID)                               { n.ob.FreeNow(id) }
func (n *Node) remoteOnly(id ids.ObjectID) bool                       { return n.ob.RemoteOnly(id) }
func (n *Node) pullLocal(id ids.ObjectID) <-chan struct{}             { return n.ob.PullLocal(id) }
func (n *Node) constructed(s *task.Spec)                              { n.ob.ReleaseChildren(s.Return(0)) }
func (n *Node) unpinTask(p *pending)                                  { n.ob.UnpinTask(p.spec.ID) }
func (n *Node) unpinReads(w *proc)                                    { n.ob.UnpinAll(workerHolder(w), objtable.ReadPin) }
func (n *Node) dropHolds(w *proc)                                     { n.ob.DropHolds(workerHolder(w)) }
func (n *Node) adopt(id ids.ObjectID, o task.Object, w *proc) task.Object {
	return n.ob.Adopt(id, o, w.name)
}
func (n *Node) pin(h objtable.Holder, id ids.ObjectID, k objtable.Kind) error {
	return n.ob.Pin(h, id, k)
}
func (n *Node) unpinOne(h objtable.Holder, id ids.ObjectID, k objtable.Kind) {
	n.ob.UnpinOne(h, id, k)
}
func (n *Node) stored(p *pending, id ids.ObjectID, o task.Object, rebuilt bool) task.Object {
	return n.ob.Result(id, p.lineage(), o, rebuilt)
}
func (n *Node) sealReserved(id ids.ObjectID, o task.Object, w *proc) task.Object {
	return n.ob.Seal(id, o, w.name)
}
func storeID(id ids.ObjectID) objstore.ID  { return objects.StoreID(id) }
func workerHolder(w *proc) objtable.Holder { return objtable.WorkerHolder(int(w.id)) }
func (n *Node) releaseOneKept(w *proc, id ids.ObjectID) {
	if w.actor != nil {
		n.ob.ReleaseOneKept(w.actor.id, id)
	}
}

// retryPull runs task p again when its worker could not pull one of its
// arguments (the Keeper decides); it reports whether it did.
func (n *Node) retryPull(w *proc, p *pending, objs []task.Object) bool {
	return p.spec.Kind == task.KindFunc && n.ob.RetryPull(p, w.name, objs)
}

// locate queues, before a message to worker w that names the shared
// objects oids, a MsgLocate for those its node's store may lack.
func (n *Node) locate(w *proc, oids []ids.ObjectID) { n.sendLocate(w, n.ob.Locate(w.node, oids)) }

func (n *Node) sendLocate(w *proc, locs []objects.Location) {
	if len(locs) > 0 {
		_ = n.append(w, task.MsgLocate, func(b []byte) []byte { return objects.AppendLocate(b, locs) })
	}
}

// abortReserved drops the room reserved for w's results that were not
// delivered (the task failed, or the worker died).
func (n *Node) abortReserved(w *proc) {
	for id := range w.reserved {
		n.ob.Abort(id)
	}
	clear(w.reserved)
}

// reserve makes room in the shared-memory store for a task result that
// worker w is about to write (MsgReserve) and answers with a
// MsgReserveReply. The store is called without the node's lock.
func (n *Node) reserve(w *proc, rid uint64, id ids.ObjectID, size int64) {
	status, msg := n.ob.Reserve(id, size)
	n.mu.Lock()
	if status == task.ReserveOK {
		if w.dead || n.closed {
			n.ob.Abort(id)
		} else {
			if w.reserved == nil {
				w.reserved = map[ids.ObjectID]bool{}
			}
			w.reserved[id] = true
		}
	}
	_ = n.append(w, task.MsgReserveReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = append(b, status)
		return wire.AppendString(b, msg)
	})
	n.unlockFor(w)
}

// handleNested decodes MsgHold and MsgContain from worker w.
func (n *Node) handleNested(w *proc, typ byte, d *wire.Dec) error {
	var parent ids.ObjectID
	if typ == task.MsgContain {
		d.Fixed(parent[:])
	}
	list := make([]ids.ObjectID, d.Count())
	for i := range list {
		d.Fixed(list[i][:])
	}
	if d.Err != nil {
		return d.Err
	}
	n.mu.Lock()
	if !n.closed && typ == task.MsgContain {
		n.ob.Contain(parent, list)
	} else if !n.closed {
		n.ob.Hold(workerHolder(w), list)
	}
	n.unlockFor(w)
	return nil
}

// The tasks' side (submit.go, restart.go).

// argsLost reports whether a reference argument of task p, about to be
// sent to a worker (as its running task, pipelined behind it, or as an
// actor's call), was lost since p got it (on a cluster: its only holder
// died while p was queued). Have starts rebuilding each such argument, and
// p waits for it again as at Submit (its claims and pins are still held);
// an argument lost for good (a Put) fails p, as at Submit.
func (n *Node) argsLost(p *pending) bool {
	if !n.ob.Clustered() {
		return false
	}
	for _, a := range p.spec.Args {
		if !a.IsRef {
			continue
		}
		o, ok := n.ob.Have(a.Ref)
		if !ok {
			p.missing++
			n.waiters[a.Ref] = append(n.waiters[a.Ref], waiter{p: p})
		} else if o.Err != nil && p.failed == nil {
			p.failed = o.Err // lost for good (a Put): p fails with it
		}
	}
	return p.missing > 0 || p.failed != nil
}

// refetchArgs prepares task p, which is to run again, when one of the
// shared arguments it was sent is lost (or always, with force): its
// arguments are claimed again (needArgs), so the lost ones are rebuilt
// first. It reports whether it took p over (p is then submitted once its
// arguments exist).
func (n *Node) refetchArgs(p *pending, force bool) bool {
	orig := p.lineage()
	if !n.ob.Clustered() || orig == nil || orig == p.spec || !force && !n.ob.ArgsGone(p.spec) {
		return false
	}
	n.unpinTask(p)
	for _, a := range orig.Args {
		if _, ok := n.store.Get(a.Ref); a.IsRef && !ok {
			n.finishErr(p, &task.TaskError{Function: p.spec.Func, Message: "argument " + a.Ref.String() + " was lost with its node and freed since; it cannot be rebuilt",
				Cause: task.Lost(a.Ref, task.ErrLostLineageDropped, "", nil)})
			return true
		}
	}
	p.spec.Args = append(p.spec.Args[:0], orig.Args...)
	p.failed, p.missing = nil, 0
	n.needArgs(p)
	if p.missing == 0 {
		n.ready(p)
	}
	return true
}

// submitNear hands task p to the scheduling core, preferring the node that
// holds the most bytes of its shared arguments (objects.Keeper.Near) when
// that node has room (sched.Cluster.SubmitNear).
func (n *Node) submitNear(p *pending, pipelined bool) {
	if k, ok := n.ob.Near(p.spec.Args); ok {
		n.core.SubmitNear(p, &p.entry.Res, pipelined, k)
		return
	}
	if depth := n.packDepth(p.entry); pipelined && depth > 0 {
		n.core.SubmitPacked(p, &p.entry.Res, depth)
		return
	}
	n.core.Submit(p, &p.entry.Res, pipelined)
}

// releaseLineage ends p's own Lineage claims (objects.Keeper.ClaimLineage,
// taken at Submit), when it ends.
func (n *Node) releaseLineage(p *pending) {
	if p.lineageHeld {
		p.lineageHeld = false
		n.ob.ReleaseLineage(p.record)
	}
}

// failRebuild stores the failure e of a rebuild of s that ended without a
// result, and reports it.
func (n *Node) failRebuild(s *task.Spec, e *task.TaskError) {
	n.ob.FailRebuild(s, e)
	if !n.quiet {
		n.ctrl.AddError(e)
		n.errQ = append(n.errQ, e)
	}
}

// The API (backend.go): each takes the lock and asks the Keeper.

// Hold records that the driver decoded a reference to id out of a value.
func (n *Node) Hold(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.ob.Hold(objtable.Holder{}, []ids.ObjectID{id})
	}
	n.mu.Unlock()
}

// Contain records that the value of object parent refers to children: they
// are not freed before parent is.
func (n *Node) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.ob.Contain(parent, children)
	}
	n.mu.Unlock()
}

// Drop tells the node that the program holds no reference to the object:
// once no queued task needs it either, it is deleted. Only objects whose
// references never left the driver are dropped (see the gray package).
func (n *Node) Drop(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.ob.Drop(objtable.Holder{}, id)
	}
	n.mu.Unlock()
}

// Free releases objects the program promised not to use again (gray.Free),
// without waiting for their references to be collected. Queued and running
// tasks that take one as an argument keep it until they end; otherwise its
// memory (shared pages included, which the store reuses for the next put) is
// released at once, and what remains under its ID is a small error saying
// it was freed, so a later Get fails clearly instead of waiting forever.
func (n *Node) Free(oids []ids.ObjectID) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	for _, id := range oids {
		n.ob.FreeNow(id)
	}
	return nil
}

// Put stores an object.
func (n *Node) Put(id ids.ObjectID, o task.Object) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	n.ob.Put(id, o)
	return nil
}

// PutEncoded stores a value of codec.InlineThreshold bytes or more in the
// shared-memory store: it is encoded straight into the object's pages
// (objects.Keeper.Write, without the lock).
func (n *Node) PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error {
	if err := n.ob.Write(id, size, encode); err != nil {
		return err
	}
	return n.Put(id, task.Object{Shared: true, Size: int64(size)})
}

// Objects returns how many objects the node's store holds.
func (n *Node) Objects() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.store.Len()
}

// ObjectStats returns the counts of the driver's objects across nodes
// (zero outside a cluster).
func (n *Node) ObjectStats() ObjectStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ob.Stats()
}

// SharedDir returns the shared-memory store's directory ("" without one).
func (n *Node) SharedDir() string {
	if n.shared == nil {
		return ""
	}
	return n.shared.Dir()
}

// SharedStats returns the shared-memory store's bookkeeping.
func (n *Node) SharedStats() objstore.Stats {
	if n.shared == nil {
		return objstore.Stats{}
	}
	return n.shared.Stats()
}

// KeptBy returns how many claims the actor id holds on kept objects (for
// tests).
func (n *Node) KeptBy(id ids.ActorID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ob.KeptBy(id)
}

// Recorded returns how many objects the object table records a claim or
// a pending deletion for (for tests: none once everything is freed).
func (n *Node) Recorded() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ob.Recorded()
}

// Check verifies the object table's invariants (objects.Keeper.Check), the
// Get/Wait matching's (sched.Waits.Check), and on a cluster that no run
// count is kept for a task that ended (checkRetries). Tests call it.
func (n *Node) Check() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return errors.Join(n.waits.Check(), n.checkRetries(), n.ob.Check(func(h objtable.Holder) bool {
		switch h.Kind {
		case objtable.Worker:
			for id, w := range n.workers {
				if objtable.WorkerHolder(int(id)) == h {
					return !w.dead
				}
			}
			return false
		case objtable.Actor:
			for id, a := range n.actors {
				if objtable.ActorHolder(id) == h {
					return !a.dead
				}
			}
			return false
		}
		return true // objects hold their children until they are deleted; tasks their arguments until they end
	}))
}

// holdKept gives actor a a claim on each Keep argument of s in shared
// memory (objects.Keeper.HoldKept).
func (n *Node) holdKept(a *actor, s *task.Spec) {
	n.ob.HoldKept(a.id, a.w != nil && a.w.node != sched.Local, s)
}

// startObjects starts the driver's transfer server, on the host of addr
// (where its workers connect), with the cluster's token, which the
// driver's own workers prove too when they pull.
func (n *Node) startObjects(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gray: the cluster's worker address %q: %w", addr, err)
	}
	c := n.cfg.Cluster
	ro, _ := c.Remote.(RemoteObjects)
	if err := n.ob.StartTransfer(objects.Transfer{Host: host, Token: c.Token, Remote: ro, Locations: c.Locations}); err != nil {
		return err
	}
	return nil
}
