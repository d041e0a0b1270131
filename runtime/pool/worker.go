package pool

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Worker is the I/O side of one worker: its connection, the messages
// queued for it, and its process. Its fields are guarded by the pool's
// lock, except those the connection's reading role owns (the handler and
// its scratch).
type Worker struct {
	id    sched.WorkerID
	local bool // on the driver's machine (a process of the pool's); else on a node of the cluster

	conn    *wire.Conn   // set once it said hello
	handle  wire.Handler // its messages' handler, run on the connection's reading role
	dirty   bool         // in Pool.dirty
	results []task.Object

	finished atomic.Uint64 // results handled (helpers stop at the next one, see Help)

	process  *os.Process // a local worker's, once started
	exited   chan struct{}
	exitOnce sync.Once // closes exited, for a remote worker
	err      error     // how its process ended (nil: it exited), once exited is closed
}

// NewWorker returns the record of worker id, which runs on the driver's
// machine when local (started by Start) or on another node of a cluster
// (its node reports its end: Exited).
func NewWorker(id sched.WorkerID, local bool) *Worker {
	return &Worker{id: id, local: local, exited: make(chan struct{})}
}

// ID returns the worker's number.
func (w *Worker) ID() sched.WorkerID { return w.id }

// Attach makes c w's connection, whose messages handle handles (on c's
// reading role: Serve's goroutine or a helper). Under the lock; called by
// Handler.Connected.
func (w *Worker) Attach(c *wire.Conn, handle wire.Handler) {
	w.conn, w.handle = c, handle
}

// Connected reports whether w said hello. Under the lock.
func (w *Worker) Connected() bool { return w.conn != nil }

// PID returns the process ID of a local worker's process, 0 before it
// started or for a remote worker. Under the lock.
func (w *Worker) PID() int {
	if w.process == nil {
		return 0
	}
	return w.process.Pid
}

// Err says how w's process ended (nil: it exited, or it has not ended).
// Under the lock, or after Exited is closed.
func (w *Worker) Err() error { return w.err }

// Exited is closed when w's process has ended.
func (w *Worker) Exited() <-chan struct{} { return w.exited }

// Kill kills a local worker's process, if it started. Under the lock.
func (w *Worker) Kill() {
	if w.process != nil {
		_ = w.process.Kill()
	}
}

// Abort ends w's connection now, dropping what is queued (its reader then
// reports w gone). Not under the lock.
func (p *Pool) Abort(w *Worker) {
	p.mu.Lock()
	c := w.conn
	p.mu.Unlock()
	if c != nil {
		_ = c.Abort()
	}
}

// Append queues a message for w; it is written when the lock is released
// (Unlock), so a burst of messages to one worker costs one write. Under
// the lock.
func (p *Pool) Append(w *Worker, typ byte, fn func([]byte) []byte) error {
	if w.conn == nil {
		return wire.ErrClosed
	}
	if !w.dirty {
		w.dirty = true
		p.dirty = append(p.dirty, w)
	}
	return w.conn.Append(typ, fn)
}

// Unlock releases the lock and writes the messages queued under it.
// Writing outside the lock keeps a slow socket from stalling the driver.
func (p *Pool) Unlock() {
	// The usual few workers are copied out so p.dirty's array is reused
	// (no allocation per unlock); a longer list is handed over whole.
	var few [8]*Worker
	d := p.dirty
	if len(d) <= len(few) {
		d = few[:copy(few[:], d)]
		clear(p.dirty)
		p.dirty = p.dirty[:0]
	} else {
		p.dirty = nil
	}
	for _, w := range d {
		w.dirty = false
	}
	p.mu.Unlock()
	for _, w := range d {
		if !w.local {
			// A worker on another node: its TCP connection's own goroutine
			// writes, so a caller submitting a burst goes on appending while
			// it does and the burst costs a few writes, not one per task.
			w.conn.FlushAsync()
			continue
		}
		_ = w.conn.Flush()
	}
}

// UnlockFor is Unlock for the reader of w's connection: while more input
// from w is already buffered, queued messages wait for the next Unlock, so
// replies to a burst go out together.
func (p *Pool) UnlockFor(w *Worker) {
	if w.conn.Buffered() > 0 {
		p.mu.Unlock()
		return
	}
	p.Unlock()
}

// CanHelp reports whether a goroutine waiting for w's answer may read w's
// connection itself (Help): w is connected over the shared-memory path.
// Under the lock.
func (w *Worker) CanHelp() bool {
	return w.conn != nil && w.handle != nil && w.conn.Shared()
}

// Help reads w's connection on the calling goroutine, handling what it
// finds, until done reports true or w returned a result (the one the
// caller waits for, or one ahead of it: the caller then waits as usual,
// not for a whole other task), for at most the connection's spin and doze
// (wire.Conn.Help). Not under the lock.
//
// A synchronous call from the driver submits a task and waits for its
// result. If the connection's reader handled the result and woke the
// waiting goroutine, the Go scheduler would wake a second thread for it
// at every call; reading it on the waiting goroutine saves that.
func (w *Worker) Help(done func() bool) {
	seen := w.finished.Load()
	w.conn.Help(w.handle, func() bool { return done() || w.finished.Load() != seen })
}
