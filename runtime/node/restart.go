package node

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Actors that are recreated when their process dies (gray.MaxRestarts),
// with their calls replayed in order (section 1.23.3 of Ray 0.2's
// documentation).
//
// An actor whose type allows restarts keeps a log: its creation task as
// submitted, and every method call it ran since its last checkpoint, as
// submitted (reference arguments intact). The log holds a Lineage claim
// on each reference argument, so they are not freed while they may be
// replayed. A call enters the log when it is sent (logSend) and stays
// there once its result came back (logDone); a checkpoint of the actor's
// state after call X (MsgCheckpoint) trims the log up to X.
//
// When the actor's process dies unexpectedly (not Kill, not the release of
// its last handle), restartActor queues, in front of the calls not yet
// sent: the creation task, a restore of the last checkpoint if there is
// one, the logged calls (run again for their effect on the state only:
// their results were stored already and are discarded), then the calls
// the dead process had been sent but not finished (their results are
// stored as usual). The core starts a new worker on the resources the
// actor holds, and pump sends the queue in order once it connects.
//
// A cluster calls restartActor for the actors of a node that died.

// restartState is the log of an actor whose type allows restarts.
type restartState struct {
	max      int // restarts allowed; -1: no limit
	restarts int // restarts so far
	create   *task.Spec
	log      []*task.Spec // calls run since the last checkpoint, in order
	saved    bool         // a checkpoint exists in n.ckpts
	// nodeLossOnly: restarted only when its node died (a cluster's
	// default for types without MaxRestarts), not when its process did.
	nodeLossOnly bool
	// starting: the actor's current worker has not connected yet. Losing
	// it then (its node died before it started, or the death of the
	// previous process and of its node are both reported) places the
	// actor again without counting another restart: one node death is
	// one restart.
	starting bool
}

// enableRestarts starts a's log if its type allows restarts. Called when
// the creation task s is submitted, before its arguments are resolved.
func (n *Node) enableRestarts(a *actor, s *task.Spec, e *task.Entry) {
	switch {
	case e.MaxRestarts != 0:
		a.ft = &restartState{max: e.MaxRestarts, starting: true, create: n.claimCall(s)}
	case n.remote != nil && !e.NoRestarts:
		// On a cluster every actor survives the loss of its node (section
		// 1.23.3 of Ray 0.2's documentation), up to maxRetries times; the
		// death of its process alone still ends it, as on one machine,
		// unless its type asks for restarts.
		a.ft = &restartState{max: maxRetries, nodeLossOnly: true, starting: true, create: n.claimCall(s)}
	}
}

// claimCall returns a copy of s with its reference arguments intact and
// claimed, so they are not freed while the call may be replayed.
func (n *Node) claimCall(s *task.Spec) *task.Spec {
	c := *s
	c.Args = append([]task.Arg(nil), s.Args...)
	c.SetGPUIDs(nil)
	n.ob.ClaimLineage(&c)
	return &c
}

// releaseCall ends the claims of claimCall.
func (n *Node) releaseCall(s *task.Spec) { n.ob.ReleaseLineage(s) }

// logSend records method call p as it is sent to a's worker.
func (n *Node) logSend(a *actor, p *pending) {
	if a.ft != nil && p.record == nil && p.spec.Kind == task.KindActorMethod {
		p.record = n.claimCall(p.spec)
	}
}

// logDone moves call p, whose result came back, into a's log.
func (n *Node) logDone(a *actor, p *pending) {
	if a.ft != nil && p.record != nil {
		a.ft.log = append(a.ft.log, p.record)
		p.record = nil
	}
}

// replayDone handles the result of p, a call run again only to rebuild
// a's state (or the restore of a checkpoint): its returns were stored the
// first time, so these are dropped.
func (n *Node) replayDone(a *actor, w *proc, p *pending, objs []task.Object) {
	n.unpinTask(p)
	n.abortReserved(w)
	n.logDone(a, p)
	if p.spec.Kind == task.KindActorRestore && len(objs) > 0 && objs[0].Err != nil {
		e := objs[0].Err
		n.actorDied(a, &task.TaskError{Function: a.typ, Worker: w.name, Message: "restoring its checkpoint after a restart failed: " + firstLine(e.Message), Cause: e})
	}
}

// restartActor recreates a, whose process died (why), and reports whether
// it did. It does not when a's type allows no restarts, or they are used
// up (then it says so in why), or the actor is ending anyway. nodeLost
// says its node died (or may have: a worker on another node), which a
// cluster's actors survive by default.
func (n *Node) restartActor(a *actor, why *task.TaskError, nodeLost bool) bool {
	f := a.ft
	if f == nil || f.nodeLossOnly && !nodeLost || a.dead || a.killed || n.closed || n.spawnErr != nil {
		return false
	}
	if a.draining && len(a.queue) == 0 && len(a.inflight) == 0 {
		return false
	}
	if !f.starting && f.max >= 0 && f.restarts >= f.max {
		why.Message += fmt.Sprintf("; it was restarted %s, the most its MaxRestarts allows", times(f.restarts))
		return false
	}
	var data []byte
	if f.saved {
		var ok bool
		var err error
		if data, ok, err = n.ckpts.Checkpoint(a.id); err != nil || !ok {
			why.Message += fmt.Sprintf("; it could not be restarted: its checkpoint cannot be read (%v)", err)
			return false
		}
	}
	if !f.starting {
		f.restarts++
		f.starting = true
	}
	n.ob.ReleaseKept(a.id) // the dead process's kept mappings; the calls sent again hold them again
	// The queue may still hold what an earlier restart queued and the dead
	// process never got: its creation task is reused; a restore is made
	// again below.
	rest := a.queue
	var head *pending
	if len(rest) > 0 && rest[0].spec.Kind == task.KindActorCreate {
		head, rest = rest[0], rest[1:]
	} else {
		head = n.replayPending(a, f.create, nil, false)
	}
	again := []*pending{head}
	if f.saved {
		s := &task.Spec{ID: ids.Child(a.id, 1<<62+uint64(f.restarts)), Kind: task.KindActorRestore, Func: a.typ,
			NumReturns: 1, Args: []task.Arg{{Data: data}}}
		again = append(again, &pending{spec: s, actor: a, discard: true})
	}
	for _, c := range f.log {
		again = append(again, n.replayPending(a, c, c, true))
	}
	for _, p := range a.inflight {
		n.unpinTask(p)
		if p.record != nil { // not the creation task or a restore: made again above
			again = append(again, n.replayPending(a, p.record, p.record, p.discard))
		}
	}
	for _, p := range rest {
		if p.spec.Kind != task.KindActorRestore {
			again = append(again, p)
		}
	}
	a.queue = again
	f.log, a.inflight = nil, nil
	a.w = nil
	n.ctrl.ActorPlaced(a.id, "") // starting again
	if !n.core.RestartActor(a.id) {
		// Its node is gone (the core returned it): place it anew.
		n.core.WaitActor(a.id, a.res)
	}
	n.step()
	return true
}

// replayPending makes a pending task that runs s (the record of a call as
// submitted) again on a restarted actor. call is the record whose claims
// the new task carries into the log (nil for the creation task, whose
// record stays in the log's head); discard drops its results.
func (n *Node) replayPending(a *actor, s, call *task.Spec, discard bool) *pending {
	c := *s
	c.Args = append([]task.Arg(nil), s.Args...)
	e, _ := task.Lookup(s.Func)
	p := &pending{spec: &c, entry: e, actor: a, record: call, again: true, discard: discard}
	n.needArgs(p)
	return p
}

// dropRestartState ends the claims of a's log: a is dead for good.
func (n *Node) dropRestartState(a *actor) {
	f := a.ft
	if f == nil {
		return
	}
	a.ft = nil
	n.releaseCall(f.create)
	for _, c := range f.log {
		n.releaseCall(c)
	}
	for _, ps := range [][]*pending{a.inflight, a.queue} {
		for _, p := range ps {
			if p.record != nil {
				n.releaseCall(p.record)
				p.record = nil
			}
		}
	}
	if f.saved {
		n.ckpts.DropCheckpoint(a.id)
	}
}

// handleCheckpoint decodes a MsgCheckpoint from w: the state of w's actor
// after call tid. It becomes the actor's checkpoint and the log forgets
// the calls up to tid; a failed checkpoint is reported and changes
// nothing.
func (n *Node) handleCheckpoint(w *proc, d *wire.Dec) error {
	var tid ids.TaskID
	d.Fixed(tid[:])
	ok := d.Byte() == 1
	var data []byte
	var msg string
	if ok {
		data = append([]byte(nil), d.Bytes()...)
	} else {
		msg = d.String()
	}
	if d.Err != nil {
		return d.Err
	}
	n.mu.Lock()
	defer n.unlockFor(w)
	a := w.actor
	if a == nil || a.ft == nil || a.dead {
		return nil
	}
	fail := func(msg string, cause error) {
		e := &task.TaskError{Function: a.typ + ".Checkpoint", Worker: w.name,
			Message: fmt.Sprintf("checkpointing actor %s after call %s failed (the previous checkpoint stays in force): %s", a.id, tid, msg), Cause: cause}
		n.ctrl.AddError(e)
		n.errQ = append(n.errQ, e)
	}
	if !ok {
		fail(msg, nil)
		return nil
	}
	f := a.ft
	i := len(f.log) - 1
	for i >= 0 && f.log[i].ID != tid {
		i--
	}
	if i < 0 {
		return nil // not a call this log knows: keep replaying from the last checkpoint
	}
	if err := n.ckpts.SaveCheckpoint(a.id, data); err != nil {
		fail(err.Error(), err)
		return nil
	}
	f.saved = true
	for _, c := range f.log[:i+1] {
		n.releaseCall(c)
	}
	f.log = append([]*task.Spec(nil), f.log[i+1:]...)
	return nil
}

// Restarts returns how many times actor id was restarted, and how many
// calls its replay log holds (for tests and inspection).
func (n *Node) Restarts(id ids.ActorID) (restarts, logged int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a := n.actors[id]; a != nil && a.ft != nil {
		return a.ft.restarts, len(a.ft.log)
	}
	return 0, 0
}

// times says n times in words: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
