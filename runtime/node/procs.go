package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
	"github.com/gray-ml/gray/runtime/workerproc"
)

// append queues a message for w; it is written when the node's lock is
// released (see unlock), so a burst of messages to one worker costs one write.
func (n *Node) append(w *proc, typ byte, fn func([]byte) []byte) error {
	if w.conn == nil {
		return wire.ErrClosed
	}
	if !w.dirty {
		w.dirty = true
		n.dirty = append(n.dirty, w)
	}
	return w.conn.Append(typ, fn)
}

// unlock releases the node's lock and writes the messages queued under it.
// Writing outside the lock keeps a slow socket from stalling the node.
func (n *Node) unlock() {
	// The usual few workers are copied out so n.dirty's array is reused
	// (no allocation per unlock); a longer list is handed over whole.
	var few [8]*proc
	d := n.dirty
	if len(d) <= len(few) {
		d = few[:copy(few[:], d)]
		clear(n.dirty)
		n.dirty = n.dirty[:0]
	} else {
		n.dirty = nil
	}
	for _, w := range d {
		w.dirty = false
	}
	n.mu.Unlock()
	for _, w := range d {
		if w.node != sched.Local {
			// A worker on another node: its TCP connection's own goroutine
			// writes, so a caller submitting a burst goes on appending while
			// it does and the burst costs a few writes, not one per task.
			w.conn.FlushAsync()
			continue
		}
		_ = w.conn.Flush()
	}
}

// unlockFor is unlock for the reader of w's connection: while more input
// from w is already buffered, queued messages wait for the next unlock, so
// replies to a burst go out together.
func (n *Node) unlockFor(w *proc) {
	if w.conn.Buffered() > 0 {
		n.mu.Unlock()
		return
	}
	n.unlock()
}

// spawn starts worker process id; a is the actor it will host, or nil for
// a pool worker. The fork happens on a new goroutine so the lock isn't held
// across it.
func (n *Node) spawn(a *actor, id sched.WorkerID) {
	if n.spawnErr != nil {
		if a != nil {
			n.actorDied(a, &task.TaskError{Function: a.typ, Message: n.spawnErr.Error(), Cause: n.spawnErr})
		} else {
			n.core.WorkerDied(id)
		}
		return
	}
	w := &proc{id: id, actor: a, exited: make(chan struct{}), node: sched.NodeOf(id)}
	w.name = fmt.Sprintf("worker %d", w.id)
	n.workers[w.id] = w
	if a != nil {
		a.w = w
	}
	if w.node != sched.Local {
		n.spawnRemote(w)
		return
	}
	if n.cfg.startWorker != nil {
		n.wg.Add(1)
		go n.startWith(w)
		return
	}
	env := append(append(os.Environ(), n.cfg.Env...),
		task.EnvSocket+"="+filepath.Join(n.dir, "node.sock"),
		task.EnvWorker+"="+strconv.Itoa(int(w.id)))
	if n.shared != nil {
		env = append(env, task.EnvStore+"="+n.shared.Dir(), task.EnvCap+"="+strconv.FormatInt(n.shared.Capacity(), 10))
	}
	if a != nil {
		env = append(env, "CUDA_VISIBLE_DEVICES="+workerproc.JoinInts(a.gpus))
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled worker would otherwise sleep 1 s at every exit.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	n.wg.Add(1)
	go n.startProc(w, workerproc.Spec{Path: n.cfg.Executable, Args: n.cfg.Args, Env: env, ID: int(w.id), LogDir: n.cfg.LogDir, Output: n.cfg.Output})
}

// startProc runs worker w's process (runtime/workerproc) and reports its
// end.
func (n *Node) startProc(w *proc, s workerproc.Spec) {
	defer n.wg.Done()
	err := workerproc.Run(s, func(p *os.Process) bool {
		n.mu.Lock()
		w.process = p
		w.name = fmt.Sprintf("worker %d (pid %d)", w.id, p.Pid)
		kill := w.dead || n.closed || (w.actor != nil && w.actor.dead) // killed or shut down while starting
		n.unlock()
		return !kill
	})
	n.ended(w, err)
}

// startWith runs worker w with Config.startWorker instead of a process.
func (n *Node) startWith(w *proc) {
	defer n.wg.Done()
	n.ended(w, n.cfg.startWorker(filepath.Join(n.dir, "node.sock"), int(w.id)))
}

// ended records that worker w's process ended, how (err), and reports its
// death if it never connected (else its connection's reader does).
func (n *Node) ended(w *proc, err error) {
	w.exitErr = err
	close(w.exited)
	n.mu.Lock()
	connected := w.conn != nil
	n.unlock()
	if !connected { // never connected: its reader will not report the death
		n.died(w)
	}
}

func (n *Node) acceptFrom(ln net.Listener) {
	defer n.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.serve(c)
	}
}

// serve reads one worker's messages until its connection closes.
func (n *Node) serve(c net.Conn) {
	defer n.wg.Done()
	conn := wire.New(c)
	typ, payload, err := conn.Recv()
	if err != nil || typ != task.MsgHello {
		conn.Close()
		return
	}
	// A worker on this machine gets the shared-memory fast path (the
	// socket stays for wake-ups and the connection's end).
	if err := conn.Offer(); err != nil {
		fmt.Fprintf(os.Stderr, "gray: worker connection: %v\n", err)
		conn.Close()
		return
	}
	d := wire.Dec{B: payload}
	id := sched.WorkerID(d.Uvarint())
	n.mu.Lock()
	w := n.workers[id]
	n.rec.Step(recovery.Connected{Node: sched.NodeOf(id)})
	if w == nil || w.conn != nil || n.closed || (w.actor != nil && w.actor.dead) {
		n.unlock()
		conn.Close()
		return
	}
	w.conn = conn
	w.handler = func(typ byte, payload []byte) error {
		if err := n.handle(w, typ, payload); err != nil {
			return badMessage{err}
		}
		return nil
	}
	if a := w.actor; a != nil {
		if a.ft != nil {
			a.ft.starting = false // a restart counts from here (restart.go)
		}
		n.ctrl.ActorPlaced(a.id, w.name)
		n.pump(a)
	} else {
		n.core.WorkerReady(w.id)
		n.step()
	}
	n.unlock()
	// The handler runs on this goroutine, or on a driver's goroutine that
	// waits for w's answer and reads it itself (see helpFor).
	if err := conn.Serve(w.handler); err != nil {
		var bad badMessage
		if errors.As(err, &bad) {
			n.mu.Lock() // w.name is written under the lock once the process starts
			name := w.name
			n.mu.Unlock()
			fmt.Fprintf(os.Stderr, "gray: bad message from %s: %v\n", name, bad.err)
		}
	}
	conn.Close()
	n.died(w)
}

func (n *Node) handle(w *proc, typ byte, payload []byte) error {
	d := wire.Dec{B: payload}
	switch typ {
	case task.MsgResult:
		var tid ids.TaskID
		d.Fixed(tid[:])
		retiring := d.Byte() == 1
		cnt := d.Count()
		// result copies the objects out: the reader's scratch slice
		// serves every result (no allocation per task).
		objs := slices.Grow(w.results[:0], cnt)[:cnt]
		for i := range objs {
			objs[i] = task.DecodeObject(&d)
		}
		w.results = objs
		// The task's run time on the worker, when the worker says (a
		// trailing field: see worker.run).
		w.ran = -1
		if d.Err == nil && len(d.B) > 0 {
			w.ran = int64(d.Uvarint())
		}
		if d.Err != nil {
			clear(objs)
			return d.Err
		}
		n.mu.Lock()
		n.result(w, tid, objs, retiring)
		n.unlockFor(w)
		w.finished.Add(1)
		clear(objs) // keep no payload alive
	case task.MsgSubmit:
		s := task.DecodeSpec(&d)
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		if n.submittedBefore(w, s) {
			// Submitted by an earlier run of w's call (resubmit.go): the
			// first submission stands.
		} else if n.submitLocked(s) == nil { // errors are stored in the task's returns
			n.adoptChild(w, s)
		}
		n.unlockFor(w)
	case task.MsgPut:
		var id ids.ObjectID
		d.Fixed(id[:])
		o := task.DecodeObject(&d)
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		if w.reserved[id] { // a Put in a task, written into reserved room
			delete(w.reserved, id)
			o = n.sealReserved(id, o, w)
		} else if _, exists := n.store.Get(id); !exists && w.node != sched.Local {
			o = n.adoptInline(id, o, w)
		} else if !exists {
			o = n.adopt(id, o, w)
		}
		if _, exists := n.store.Get(id); !exists {
			n.putLocked(id, o)
		}
		n.unlockFor(w)
	case task.MsgDrop:
		cnt := d.Count()
		n.mu.Lock()
		for range cnt {
			var id ids.ObjectID
			d.Fixed(id[:])
			if d.Err == nil && !n.closed {
				n.drop(objtable.WorkerHolder(int(w.id)), id)
			}
		}
		n.unlockFor(w)
		if d.Err != nil {
			return d.Err
		}
	case task.MsgReserve:
		rid := d.Uvarint()
		var id ids.ObjectID
		d.Fixed(id[:])
		size := d.Uvarint()
		if d.Err != nil {
			return d.Err
		}
		n.reserve(w, rid, id, int64(size))
	case task.MsgFree:
		cnt := d.Count()
		n.mu.Lock()
		for range cnt {
			var id ids.ObjectID
			d.Fixed(id[:])
			if d.Err == nil && !n.closed {
				n.freeNow(id)
			}
		}
		n.unlockFor(w)
		if d.Err != nil {
			return d.Err
		}
	case task.MsgGet, task.MsgWait:
		rid := d.Uvarint()
		need, timeout := 0, time.Duration(0)
		if typ == task.MsgWait {
			need = int(d.Uvarint())
			timeout = time.Duration(d.Uvarint())
		}
		cnt := d.Count()
		oids := make([]ids.ObjectID, cnt)
		for i := range oids {
			d.Fixed(oids[i][:])
		}
		if d.Err != nil {
			return d.Err
		}
		if typ == task.MsgGet {
			need = cnt
		}
		n.mu.Lock()
		r := n.newRequest(w, rid, oids, need, typ == task.MsgWait)
		if timeout > 0 && n.waits.Open(r.rq) {
			r.timer = time.AfterFunc(timeout, func() {
				n.mu.Lock()
				n.waits.Timeout(r.rq)
				n.step()
				n.unlockFor(w)
			})
		}
		n.unlockFor(w)
	case task.MsgGiveBack:
		cnt := d.Count()
		back := make(map[ids.TaskID]bool, cnt)
		for range cnt {
			var id ids.TaskID
			d.Fixed(id[:])
			back[id] = true
		}
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.core.GiveBack(w.id, func(p *pending) bool { return back[p.spec.ID] })
		n.step()
		n.unlockFor(w)
	case task.MsgStacks:
		n.gotStacks(w, payload)
	case task.MsgKillActor:
		var id ids.ActorID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		_ = n.Kill(id)
	case task.MsgCheckpoint:
		if err := n.handleCheckpoint(w, &d); err != nil {
			return err
		}
	case task.MsgActorAddr, task.MsgDirectAddr, task.MsgDirectReadsDone:
		if err := n.handleDirect(w, typ, &d); err != nil {
			return err
		}
	case task.MsgHold, task.MsgContain:
		if err := n.handleNested(w, typ, &d); err != nil {
			return err
		}
	case task.MsgReleaseShared:
		var id ids.ObjectID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.releaseOneKept(w, id)
		n.unlockFor(w)
	default:
		return fmt.Errorf("unknown message type %d", typ)
	}
	n.flushErrors()
	return nil
}

// result stores what a task returned and frees its worker.
func (n *Node) result(w *proc, tid ids.TaskID, objs []task.Object, retiring bool) {
	var p *pending
	n.unpinReads(w)
	if a := w.actor; a != nil {
		if len(a.inflight) == 0 || a.inflight[0].spec.ID != tid {
			return // the actor was killed; its calls have failed already
		}
		p = a.inflight[0]
		a.inflight = a.inflight[1:]
	} else {
		run, ok := n.core.Running(w.id)
		if !ok || run.spec.ID != tid {
			return
		}
		p = run
		n.waits.TaskEnded(w.id) // a Get that outlived its task: nobody waits for an answer parked
		n.core.TaskDone(w.id, retiring)
		n.timeRun(w, p)
	}
	n.cfg.Events.Finished(int(w.id), tid, p.spec.Func, p.sent)
	if p.discard {
		n.replayDone(w.actor, w, p, objs)
		n.step()
		return
	}
	n.unpinTask(p)
	if w.actor == nil && n.retryPull(w, p, objs) {
		n.abortReserved(w)
		n.step()
		return
	}
	rebuilt := n.rec.Rebuilding(tid)
	n.rec.Step(recovery.Ended[*pending]{Task: p, ID: tid})
	var failed *task.TaskError
	for i, o := range objs {
		if p.spec.Kind == task.KindActorCreate {
			if o.Err != nil && failed == nil {
				failed = o.Err
			}
			continue
		}
		id := p.spec.Return(i)
		if _, exists := n.store.Get(id); exists && (rebuilt || p.spec.Kind == task.KindFunc) {
			// A return that was not evicted, or one that an earlier run
			// of the same task stored (submitted again by a call run a
			// second time, resubmit.go): keep the original.
			continue
		}
		if w.reserved[id] {
			delete(w.reserved, id)
			o = n.sealReserved(id, o, w)
		} else if w.node != sched.Local {
			o = n.adoptInline(id, o, w)
		} else {
			o = n.adopt(id, o, w)
		}
		if o.Err != nil && failed == nil {
			failed = o.Err
		}
		// A rebuilt object was made once. If this attempt failed (no room
		// in the store, say), the error answers who waits now and the next
		// request rebuilds it again (see have), up to a point (lost.go).
		o = n.stored(p, id, o, rebuilt)
		n.putLocked(id, o)
	}
	n.releaseLineage(p) // its results' lineage records hold what they need now
	n.abortReserved(w)  // reserved for returns the task did not deliver
	if a := w.actor; a != nil {
		n.logDone(a, p)
	}
	if p.spec.Kind == task.KindActorCreate {
		n.constructed(p.spec)
	}
	if failed != nil {
		n.ctrl.AddError(failed)
		n.errQ = append(n.errQ, failed)
	}
	n.ctrl.TaskFinished(tid, failed)
	if p.spec.Kind == task.KindActorCreate && failed != nil {
		n.actorDied(p.actor, &task.TaskError{Function: p.actor.typ, Worker: w.name, Message: "its constructor failed: " + firstLine(failed.Message), Cause: failed})
	}
	if a := w.actor; a != nil && a.draining && len(a.queue) == 0 && len(a.inflight) == 0 {
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "no handle to the actor remains", Cause: task.ErrActorDead})
	}
	if a := w.actor; a != nil {
		n.answerDirect(a) // its constructor may have run (direct.go)
	}
	n.step()
}

// died handles the end of a worker process.
func (n *Node) died(w *proc) {
	if w.node == sched.Local {
		select {
		case <-w.exited:
		case <-time.After(2 * time.Second):
		}
	}
	n.mu.Lock()
	if w.dead {
		n.unlock()
		return
	}
	w.dead = true
	delete(n.workers, w.id)
	if n.shared != nil && !n.closed {
		n.unpinReads(w)
		n.abortReserved(w)
	}
	if n.closed {
		// Shutdown ends every worker: that is no task failure to report.
		n.unlock()
		return
	}
	n.dropHolds(w)
	n.waits.WorkerGone(w.id)
	if w.conn == nil && (w.actor == nil || !w.actor.dead) { // not an actor killed while starting
		if w.node != sched.Local {
			n.remoteStartFailed(w)
		} else {
			n.startFailed(w)
		}
	}
	how := "exited"
	if w.exitErr != nil {
		how = w.exitErr.Error()
	}
	if a := w.actor; a != nil {
		why := &task.TaskError{Function: a.typ, Worker: w.name, Message: "its worker process died (" + how + ")", Cause: task.ErrWorkerDied}
		if a.w == w && !n.restartActor(a, why, w.node != sched.Local) {
			n.actorDied(a, why)
		}
	} else {
		// Its running task comes back as an Orphan effect (orphaned); the
		// tasks queued behind it never started: the core runs them
		// elsewhere.
		n.gone = &gone{w: w, why: how}
		n.core.WorkerDied(w.id)
	}
	n.step()
	n.gone = nil
	n.unlock()
	n.flushErrors()
}

// startFailed counts a worker that exited before connecting. Several in a
// row mean the program does not serve tasks when started as a worker: stop
// starting workers and fail what waits for one, rather than respawn
// forever (the recovery core decides; stopSpawning).
func (n *Node) startFailed(w *proc) {
	why := "exited"
	if w.exitErr != nil {
		why = w.exitErr.Error()
	}
	n.recover(recovery.StartFailed{Node: sched.Local, Why: why})
}
