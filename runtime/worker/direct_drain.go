package worker

import (
	"fmt"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

// Release's drain, the callee's side (the decision is runtime/direct's,
// drain.go; the caller's side is direct.go's drainTo). The driver released
// this worker's actor while direct callers held its address: a call of
// theirs may be on the wire. So instead of stopping the process it sends
// MsgDirectDrain, once every caller given the address has dialled it
// (MsgDirectDialed; a caller registers here before its handshake ends,
// so each connected one is known by then) or died, and the worker
//   - stops taking direct connections (none is to come: a caller that
//     connected now anyway would go through the driver, which fails its
//     calls as calls to a released actor);
//   - tells each connected caller (MsgDirectDrain on the connection,
//     once its handshake ended);
//   - each caller answers with MsgDirectDrained after the last call it
//     sent there, so every call it made directly is queued here by then,
//     and closes the connection once all their results came;
//   - exits once every connection ended.
//
// A caller that does not answer within drainAnswerWait (a stopped
// process) has its connection closed: its calls without a result fail
// with ErrActorDead on its side, as calls to a killed actor do. Once a
// caller has answered nothing is timed: Release promises the actor ends
// once its calls are done, however long they run.

// drainAnswerWait bounds how long a draining worker waits for a connected
// caller's answer. A live caller answers from its reading goroutine at
// once, whatever it runs, so only a stopped or wedged one takes long.
const drainAnswerWait = 10 * time.Second

// drainConn is what a drain waits for of one caller's connection.
type drainConn struct {
	ready    chan struct{} // closed when its handshake (Offer) ended: frames may be sent
	answered chan struct{} // closed when its MsgDirectDrained came
	ended    chan struct{} // closed when serveDirect returned
}

// addConn registers caller's connection c for a drain, or reports false
// when the worker drains already: c is then closed, unserved.
func (w *Worker) addConn(c *directConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.callee.draining {
		return false
	}
	c.drain = &drainConn{ready: make(chan struct{}), answered: make(chan struct{}), ended: make(chan struct{})}
	if w.callee.conns == nil {
		w.callee.conns = map[*directConn]bool{}
	}
	w.callee.conns[c] = true
	return true
}

// connEnded forgets caller's connection c, which ended.
func (w *Worker) connEnded(c *directConn) {
	w.mu.Lock()
	delete(w.callee.conns, c)
	w.mu.Unlock()
	close(c.drain.ended)
}

// drainDirect carries out MsgDirectDrain: see above. It ends the process.
func (w *Worker) drainDirect() {
	w.mu.Lock()
	w.callee.draining = true
	lns := w.callee.lns
	conns := make([]*directConn, 0, len(w.callee.conns))
	for c := range w.callee.conns {
		conns = append(conns, c)
	}
	w.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close() // acceptDirect ends
	}
	wait := drainAnswerWait
	if w.callee.drainWait > 0 {
		wait = w.callee.drainWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	late := false
	for _, c := range conns {
		// A connection registered in its handshake gets the word once
		// the handshake ended (nothing may precede the transport's).
		select {
		case <-c.drain.ready:
			_ = c.Send(task.MsgDirectDrain, nil) // a caller gone ends its connection
		case <-c.drain.ended:
		case <-deadline.C:
			late = true
		}
		if late {
			break
		}
	}
	for _, c := range conns {
		if !late {
			select {
			case <-c.drain.answered:
			case <-c.drain.ended:
			case <-deadline.C:
				late = true
			}
		}
		if late && !isDone(c.drain.answered) && !isDone(c.drain.ended) {
			fmt.Fprintf(os.Stderr, "gray: %s: a direct caller did not answer the actor's release within %v; its calls without a result fail\n", w.name, wait)
			c.Close()
		}
	}
	for _, c := range conns {
		<-c.drain.ended
	}
	// The driver did not ask this process to go (no MsgExit): what it
	// still has for the driver (a drained call's MsgContain or
	// MsgDirectReadsDone, which a busy driver may not have read yet) goes
	// out before it does. Close waits for that, within its grace.
	_ = w.conn.Close()
	w.exit(0)
}

// drainTo carries out callee c's MsgDirectDrain, the caller's side: later
// calls to c go through the driver (which fails them: the actor was
// released), MsgDirectDrained follows the last call sent, and the
// connection closes once every call sent has its result. It reports
// whether it closed it (the receiving goroutine then ends).
func (dc *directCalls) drainTo(c *callee) bool {
	dc.mu.Lock()
	if c.path != pathDirect || c.draining.Load() {
		dc.mu.Unlock()
		return false
	}
	c.draining.Store(true)
	// Under dc.mu, which orders the sends: no call follows it. An error
	// ends the connection: receive's lost then fails what is left.
	_ = c.conn.Send(task.MsgDirectDrained, nil)
	dc.mu.Unlock()
	return c.sent.Load() == 0 && dc.closeDrained(c)
}

// answeredCall counts a result of c's calls, and reports whether that was
// the last one c owed while draining (the connection closed). Whichever
// of it and drainTo sees the other's write closes; both may try.
func (dc *directCalls) answeredCall(c *callee) bool {
	return c.sent.Add(-1) == 0 && c.draining.Load() && dc.closeDrained(c)
}

// closeDrained closes draining c's connection, unless it is closed
// already, and reports whether it did.
func (dc *directCalls) closeDrained(c *callee) bool {
	dc.mu.Lock()
	if c.path != pathDirect {
		dc.mu.Unlock()
		return false
	}
	c.path = pathDriver
	dc.mu.Unlock()
	c.conn.Close() // the callee exits once its callers' connections ended
	return true
}
