package node

import (
	"fmt"
	"os"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Worker processes: the node's side of runtime/pool, which starts them,
// serves their connections and writes what the node queues for them. The
// node decides what a worker is for and what its messages and death mean.

// append queues a message for w; it is written when the node's lock is
// released (unlock), so a burst of messages to one worker costs one write.
func (n *Node) append(w *proc, typ byte, fn func([]byte) []byte) error {
	return n.pool.Append(w.Worker, typ, fn)
}

// unlock releases the node's lock and writes the messages queued under it.
func (n *Node) unlock() { n.pool.Unlock() }

// unlockFor is unlock for the reader of w's connection: while more input
// from w is already buffered, the replies wait for the next unlock.
func (n *Node) unlockFor(w *proc) { n.pool.UnlockFor(w.Worker) }

// spawn starts worker process id; a is the actor it will host, or nil for
// a pool worker.
func (n *Node) spawn(a *actor, id sched.WorkerID) {
	if n.spawnErr != nil {
		if a != nil {
			n.acts.End(a, n.spawnErr.For(a.typ))
		} else {
			n.core.Step(sched.WorkerDied{W: id})
		}
		return
	}
	k := sched.NodeOf(id)
	w := &proc{Worker: pool.NewWorker(id, k == sched.Local), id: id, actor: a, node: k}
	w.name = fmt.Sprintf("worker %d", w.id)
	n.workers[w.id] = w
	var gpus []int
	if a != nil {
		a.w, gpus = w, a.gpus
	}
	if k == sched.Local {
		n.pool.Start(w.Worker, a != nil, gpus)
		return
	}
	w.name = fmt.Sprintf("worker %d on %s", w.id-sched.FirstWorker(k)+1, n.rec.Name(k))
	n.remote.cfg.Remote.StartWorker(k, w.id, pool.RemoteEnv(w.Worker, n.remote.addr, n.remote.cfg.Token, a != nil, gpus))
}

// poolHandler is the node as the pool's pool.Handler (its methods are
// not the node's API).
type poolHandler Node

// Started implements pool.Handler: local worker pw's process runs.
func (h *poolHandler) Started(pw *pool.Worker) bool {
	n := (*Node)(h)
	w := n.workers[pw.ID()]
	if w == nil || n.closed || (w.actor != nil && w.actor.Dead()) {
		return false // killed or shut down while starting
	}
	w.name = fmt.Sprintf("worker %d (pid %d)", w.id, pw.PID())
	return true
}

// Connected implements pool.Handler: worker id said hello on c.
func (h *poolHandler) Connected(id sched.WorkerID, c *wire.Conn) *pool.Worker {
	n := (*Node)(h)
	w := n.workers[id]
	n.rec.Step(recovery.Connected{Node: sched.NodeOf(id)})
	if w == nil || w.Connected() || n.closed || (w.actor != nil && w.actor.Dead()) {
		return nil
	}
	w.Attach(c, func(typ byte, payload []byte) error {
		if err := n.handle(w, typ, payload); err != nil {
			return pool.Bad(err)
		}
		return nil
	})
	if w.actor != nil {
		n.acts.Placed(w.actor, w.name)
	} else {
		n.core.Step(sched.WorkerReady{W: w.id})
		n.step()
	}
	return w.Worker
}

// hostActor makes pool worker id, started and idle and now out of the
// core's pool (see sched's reuse.go), the worker of actor a, so creating
// the actor costs no process start.
func (n *Node) hostActor(a *actor, id sched.WorkerID) {
	w := n.workers[id]
	if w == nil || w.dead {
		// The core takes only connected workers, and a death reaches the
		// core and this table under the same lock; fail loudly if not.
		n.acts.End(a, &task.TaskError{Function: a.typ, Message: "its pool worker was gone before the actor started on it", Cause: task.ErrWorkerDied})
		return
	}
	w.actor, a.w = a, w
	n.acts.Placed(a, w.name)
}

// handle carries out one message of worker w (its connection's reader,
// or a driver's goroutine helping it: requests.go).
func (n *Node) handle(w *proc, typ byte, payload []byte) error {
	switch typ {
	case task.MsgResult:
		r, err := w.DecodeResult(payload)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.result(w, r)
		n.unlockFor(w)
		w.Handled()
	case task.MsgSubmit:
		d := wire.Dec{B: payload}
		s := task.DecodeSpec(&d)
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		// One submitted by an earlier run of w's call stands (resubmit.go);
		// errors are stored in the task's returns.
		if !n.submittedBefore(w, s) && n.submitLocked(s) == nil && s.Kind == task.KindActorCreate && w.actor != nil {
			n.acts.Restart(restart.Adopted{Parent: w.actor.id, Child: s.ID})
		}
		n.unlockFor(w)
	case task.MsgPut, task.MsgDrop, task.MsgFree, task.MsgReserve, task.MsgHold, task.MsgContain, task.MsgReleaseShared:
		if err := n.ob.Handle(objSender{n, w}, typ, payload); err != nil {
			return err
		}
	case task.MsgGet, task.MsgWait:
		m, err := pool.DecodeRequest(typ, payload)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.reqs.Ask(w, w.id, w.actor == nil, m)
		n.unlockFor(w)
	case task.MsgGiveBack:
		back, err := pool.DecodeTasks(payload)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.core.Step(sched.GaveBack[*pending]{W: w.id, Back: func(p *pending) bool { return back[p.spec.ID] }})
		n.step()
		n.unlockFor(w)
	case task.MsgStacks:
		n.pool.GotStacks(w.Worker, payload)
	case task.MsgKillActor:
		var id ids.ActorID
		if err := pool.DecodeID(payload, id[:]); err != nil {
			return err
		}
		_ = n.Kill(id)
	case task.MsgActorAddr, task.MsgDirectAddr, task.MsgDirectDialed, task.MsgDirectReadsDone, task.MsgPromise, task.MsgLease, task.MsgLeaseReturn, task.MsgOwnerBlocked, task.MsgOwnerUnblocked:
		if err := n.handleDirect(w, typ, payload); err != nil {
			return err
		}
	case task.MsgCheckpoint:
		m, err := pool.DecodeCheckpoint(payload)
		if err != nil {
			return err
		}
		n.checkpoint(w, m)
	default:
		return fmt.Errorf("unknown message type %d", typ)
	}
	n.flushErrors()
	return nil
}

// result stores what a task returned and frees its worker.
func (n *Node) result(w *proc, r pool.Result) {
	tid, objs := r.Task, r.Objects
	var p *pending
	n.unpinReads(w)
	if a := w.actor; a != nil {
		var ran bool
		if p, ran = n.acts.Returned(a, tid); !ran {
			return // the actor was killed; its calls have failed already
		}
	} else {
		run, ok := n.core.Running(w.id)
		if !ok || run.spec.ID != tid {
			return
		}
		p = run
		n.waits.TaskEnded(w.id) // a Get that outlived its task: nobody waits for an answer parked
		n.core.Step(sched.TaskDone{W: w.id, Retiring: r.Retiring})
		w.lastDone = n.timer.Returned(p.entry, r.Ran, p.sent, w.lastDone)
	}
	n.cfg.Events.Finished(int(w.id), tid, p.spec.Func, p.sent)
	if p.discard { // run again to rebuild its actor's state: its results were stored the first time
		n.unpinTask(p)
		n.abortReserved(w)
		n.acts.Replayed(w.actor, p, w.name, objs)
		n.step()
		return
	}
	n.unpinTask(p)
	if w.actor == nil && n.retryPull(w, p, objs) {
		n.abortReserved(w)
		n.step()
		return
	}
	failed := n.ob.Results(p, p.spec, p.lineage(), objWorker(w), objs)
	n.releaseLineage(p) // its results' lineage records hold what they need now
	n.abortReserved(w)  // reserved for returns the task did not deliver
	if a := w.actor; a != nil {
		n.acts.Ran(a, p)
	}
	if p.spec.Kind == task.KindActorCreate {
		n.constructed(p.spec)
	}
	if failed != nil {
		n.ctrl.AddError(failed)
		n.errQ = append(n.errQ, failed)
	}
	n.ctrl.TaskFinished(tid, failed)
	if a := w.actor; a != nil {
		n.acts.Finished(a, p, w.name, failed) // a failed constructor, or a release, may end it
		n.answerDirect(a)                     // its constructor may have run (direct.go)
	}
	n.step()
}

// Gone implements pool.Handler: worker pw's connection or process ended
// (bad: the message that ended it).
func (h *poolHandler) Gone(pw *pool.Worker, bad error) {
	n := (*Node)(h)
	n.mu.Lock()
	w := n.workers[pw.ID()]
	if w == nil || w.Worker != pw {
		n.unlock()
		return // reported already
	}
	if bad != nil {
		fmt.Fprintf(os.Stderr, "gray: bad message from %s: %v\n", w.name, bad)
	}
	w.dead = true
	delete(n.workers, w.id)
	if n.closed {
		// Shutdown ends every worker: that is no task failure to report.
		n.unlock()
		return
	}
	n.ob.WorkerGone(workerHolder(w))
	n.ownerGone(w) // its leases and promises (direct.go)
	n.waits.WorkerGone(w.id)
	if !w.Connected() && (w.actor == nil || !w.actor.Dead()) { // not an actor killed while starting
		// Several in a row mean the program does not serve tasks when
		// started as a worker: the recovery core stops the starts here, or
		// takes another node out of the job, rather than respawn forever.
		n.recover(recovery.StartFailed{Node: w.node, Err: w.Err()})
	}
	how := "exited"
	if err := w.Err(); err != nil {
		how = err.Error()
	}
	if a := w.actor; a != nil {
		why := &task.TaskError{Function: a.typ, Worker: w.name, Message: "its worker process died (" + how + ")", Cause: task.ErrWorkerDied}
		if a.w == w {
			n.acts.Lost(a, why, w.node != sched.Local)
		}
	} else {
		// Its running task comes back as an Orphan effect (orphaned); the
		// tasks queued behind it never started: the core runs them
		// elsewhere.
		n.gone = &recovery.TaskLost[*pending]{Worker: w.name, Why: how, Local: w.node == sched.Local}
		n.core.Step(sched.WorkerDied{W: w.id})
	}
	n.step()
	n.gone = nil
	n.unlock()
	n.flushErrors()
}
