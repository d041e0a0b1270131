package worker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Direct actor calls, the callee's side (see direct.go). When the driver
// asks (MsgDirectListen), an actor's worker listens: on a Unix socket
// beside the driver's on the driver's machine, on TCP (with the cluster
// token's handshake) on another node. Calls read from a caller's
// connection join the worker's one queue, behind and between the driver's
// and other callers' (each connection's in its order), and their results
// go back on that connection. While such a call runs, its large return
// values travel inline (the driver never sees the result, so it could not
// seal room reserved in its store), and the objects its Gets pinned are
// unpinned when it ends (MsgDirectReadsDone).

// calleeState is a worker's state as a callee of direct calls.
type calleeState struct {
	lns     []net.Listener             // a Unix socket, TCP, or both (directListener)
	on      atomic.Bool                // lns is set: originOf has calls to look for
	origins map[*task.Spec]*directConn // queued direct calls and their connections, under Worker.mu
	running atomic.Bool                // a direct call runs now
	leased  atomic.Bool                // it is a leased task (lease_callee.go)
	blocked atomic.Bool                // it waits in Get or Wait: leased tasks go back at once
	refs    atomic.Bool                // its return values hold references (ContainResult)
	read    atomic.Bool                // it read objects through the driver (Get)
	// Batched lease results (lease_callee.go): the run time of each
	// function's last leased task, and the lease connection whose
	// results wait for the next flush (only the runner touches them).
	runs map[string]time.Duration
	held *directConn
	// Release's drain (direct_drain.go), under Worker.mu: the actor
	// callers' connections, and whether the worker drains.
	conns     map[*directConn]bool
	draining  bool
	drainWait time.Duration // 0: drainAnswerWait (tests shorten it)
}

// listenDirect answers MsgDirectListen: it starts listening (once) and
// tells the driver where.
func (w *Worker) listenDirect() {
	addr := ""
	w.mu.Lock()
	if w.callee.lns == nil {
		lns, a, err := w.directListener()
		if err != nil {
			fmt.Fprintf(os.Stderr, "gray: %s: taking direct calls: %v; they go through the driver\n", w.name, err)
		} else {
			w.callee.lns = lns
			w.callee.on.Store(true)
			for _, ln := range lns {
				go w.acceptDirect(ln) // owned by the listener, which lives as long as the process
			}
		}
		addr = a
	} else {
		addr = w.calleeAddr
	}
	w.calleeAddr = addr
	w.mu.Unlock()
	_ = w.conn.Send(task.MsgDirectAddr, func(b []byte) []byte { return wire.AppendString(b, addr) })
}

// directListener listens where callers can reach this worker: on a Unix
// socket beside the driver's on the driver's machine, and there also on
// TCP at task.EnvDirectHost when the driver runs a cluster (callers on
// other nodes); on TCP on another node. The address says all, space-
// separated (runtime/direct picks one per caller).
func (w *Worker) directListener() ([]net.Listener, string, error) {
	sock := os.Getenv(task.EnvSocket)
	if !strings.HasPrefix(sock, "tcp:") {
		path := filepath.Join(filepath.Dir(sock), "direct-"+strconv.Itoa(w.id)+".sock")
		_ = os.Remove(path) // a previous process of this worker number
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, "", err
		}
		host := os.Getenv(task.EnvDirectHost)
		if host == "" {
			return []net.Listener{ln}, path, nil
		}
		tl, addr, err := tcpListener(host)
		if err != nil {
			// This machine's callers still call it directly.
			fmt.Fprintf(os.Stderr, "gray: %s: taking direct calls from other nodes: %v; theirs go through the driver\n", w.name, err)
			return []net.Listener{ln}, path, nil
		}
		return []net.Listener{ln, tl}, path + " " + addr, nil
	}
	host := "0.0.0.0"
	if w.localIP != nil {
		host = w.localIP.String()
	}
	ln, addr, err := tcpListener(host)
	if err != nil {
		return nil, "", err
	}
	return []net.Listener{ln}, addr, nil
}

// tcpListener listens on host with the cluster token's handshake and
// returns the listener and its address as callers dial it ("tcp:…").
func tcpListener(host string) (net.Listener, string, error) {
	tok, err := clusterToken("to serve direct calls with")
	if err != nil {
		return nil, "", err
	}
	ln, err := transfer.Listen(net.JoinHostPort(host, "0"), tok)
	if err != nil {
		return nil, "", err
	}
	return ln, "tcp:" + ln.Addr().String(), nil
}

// acceptDirect takes callers' connections.
func (w *Worker) acceptDirect(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		go w.serveDirect(wire.New(c)) // owned by the connection: it ends with it
	}
}

// directConn is a caller's connection: an actor's caller, or the owner of
// a lease on this worker (lease_callee.go).
type directConn struct {
	*wire.Conn
	lease bool
	drain *drainConn // an actor's caller (direct_drain.go); nil for a lease
}

// serveDirect queues the calls read from one caller's connection until it
// ends. Calls already queued still run, their results going nowhere;
// tasks of a lease that ended are dropped (lease_callee.go).
func (w *Worker) serveDirect(conn *wire.Conn) {
	defer conn.Close()
	typ, hello, err := conn.Recv()
	if err != nil || typ != task.MsgHello {
		return
	}
	c := &directConn{Conn: conn, lease: len(hello) > 0 && hello[0] == 1}
	if c.lease {
		defer w.leaseConnEnded(c)
	} else {
		// Registered before the handshake ends, so once the caller's
		// side of it has (it then tells the driver: MsgDirectDialed),
		// a release's drain finds this connection (direct_drain.go).
		if !w.addConn(c) {
			return // the actor was released: the caller goes through the driver
		}
		defer w.connEnded(c)
	}
	err = c.Offer()
	if c.drain != nil {
		close(c.drain.ready)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gray: %s: direct call connection: %v\n", w.name, err)
		return
	}
	for {
		typ, payload, err := c.Recv()
		if err != nil {
			return
		}
		switch {
		case typ == task.MsgDirectDrained && c.drain != nil:
			if !isDone(c.drain.answered) { // (only this goroutine closes it)
				close(c.drain.answered)
			}
		case typ == task.MsgExec:
			if !w.queueDirect(c, payload) {
				w.kick() // the calls before it still run
				return
			}
		}
		// The whole burst is taken in before it runs; whatever frame
		// ends it, the calls queued before it run. (A caller's
		// MsgDirectDrained comes right behind its last calls: were
		// only a call's frame to start them, they would wait for good.)
		if c.Buffered() > 0 {
			continue
		}
		w.kick()
	}
}

// queueDirect queues the direct call encoded in payload, read from c, or
// hands it back to c's lease owner while the running task waits. It
// reports false for a call it cannot decode: c is then to be closed.
func (w *Worker) queueDirect(c *directConn, payload []byte) bool {
	d := wire.Dec{B: payload}
	s := task.DecodeSpec(&d)
	if d.Err != nil {
		fmt.Fprintf(os.Stderr, "gray: %s: bad direct call: %v\n", w.name, d.Err)
		return false
	}
	if c.lease && w.callee.blocked.Load() {
		giveBackTo(c, []*task.Spec{s}) // the running task waits: s runs elsewhere
		return true
	}
	w.mu.Lock()
	w.queue = append(w.queue, s)
	if w.callee.origins == nil {
		w.callee.origins = map[*task.Spec]*directConn{}
	}
	w.callee.origins[s] = c
	w.mu.Unlock()
	return true
}

// kick runs the queued tasks on this goroutine unless one runs them
// already; if no goroutine then reads the driver's messages, it starts one.
func (w *Worker) kick() {
	w.mu.Lock()
	if w.running || len(w.queue) == 0 {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	if w.runQueue() {
		go w.read()
	}
}

// originOf returns the caller's connection of direct call s (nil: the
// driver sent it).
func (w *Worker) originOf(s *task.Spec) *directConn {
	if !w.callee.on.Load() {
		return nil // no lock per task for a worker that takes no direct calls
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.callee.origins[s]
	if c != nil {
		delete(w.callee.origins, s)
	}
	return c
}

// runDirect runs direct call s and sends its result back on c.
func (w *Worker) runDirect(s *task.Spec, c *directConn) {
	if h := w.callee.held; h != nil && h != c {
		w.flushHeld()
	}
	w.callee.running.Store(true)
	w.callee.leased.Store(c.lease)
	w.callee.refs.Store(false)
	w.callee.read.Store(false)
	t0 := time.Now()
	objs, _ := w.exec(s)
	ran := time.Since(t0)
	w.callee.running.Store(false)
	w.callee.leased.Store(false)
	refs := w.callee.refs.Load()
	if w.callee.read.Load() {
		// Before the result: once its caller has it, a lease may end and
		// the driver send this worker a task whose reads this must not
		// unpin.
		_ = w.conn.Send(task.MsgDirectReadsDone, nil)
	}
	// A caller that went away gets nothing; the actor goes on.
	_ = c.Append(task.MsgResult, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		b = wire.AppendUvarint(b, uint64(len(objs)))
		for i := range objs {
			b = task.AppendObject(b, &objs[i])
		}
		if refs {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		// How long it ran: a lease's owner pipelines short tasks by it
		// (lease.go).
		return wire.AppendUvarint(b, uint64(max(ran, 0)))
	})
	if !w.holdResult(s, c, ran) {
		_ = c.Flush()
	}
	w.collectNested()
}

// lastTaskID returns the ID of the task the running task submitted last
// (zero if none).
func (w *Worker) lastTaskID() ids.TaskID {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == 0 {
		return ids.TaskID{}
	}
	return ids.Child(w.cur, w.subs)
}
