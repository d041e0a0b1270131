// Package pool is the driver's side of its worker processes: it starts
// them (on this machine; a cluster's node daemon starts the others),
// accepts their connections, reads their messages into the handler the
// driver gives each, and writes what the driver queued for them once the
// driver's lock is released. It decides nothing: when a worker starts,
// what a message means and what a worker's death costs are the node's
// (runtime/node) and its cores'.
//
// The pool shares its owner's lock (Config.Lock): the node queues messages
// and attaches connections under the lock it holds anyway, so the hot path
// takes no second lock. Unlock releases it and writes what was queued, so
// no socket is written under the lock. The pool's goroutines (one per
// listener, one per connection, one per process) are its own, ended by
// Close.
package pool

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gray-ml/gray/internal/owned"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Config configures a Pool.
type Config struct {
	// Lock is the owner's lock. It guards the pool's workers and the
	// messages queued for them; the Handler's calls said to be under the
	// lock hold it, and Unlock releases it.
	Lock *sync.Mutex
	// Executable and Args start a local worker (default: the program
	// itself); Env is added to its environment (after the driver's own).
	Executable string
	Args       []string
	Env        []string
	// LogDir, when set, receives each local worker's output as files
	// (worker-N.out and .err; made if missing); otherwise its lines go to
	// Output (default: os.Stdout), prefixed.
	LogDir string
	Output io.Writer
	// StoreDir and StoreCap name the shared-memory object store a local
	// worker maps (task.EnvStore, task.EnvCap); "": none.
	StoreDir string
	StoreCap int64
	// Play, when not nil, replaces starting a local worker's process
	// (tests play workers with it): it runs on a goroutine of the pool's
	// with the socket and the worker's number, connects and says hello as
	// a worker would, and returns once the worker has ended, with how it
	// ended (nil: it exited).
	Play func(socket string, id int) error
}

// Handler is what a Pool tells its owner; runtime/node implements it.
type Handler interface {
	// Connected is called under the lock when worker id has said hello on
	// c (the shared-memory path offered). It returns the worker, attached
	// to c with Worker.Attach, or nil to refuse c (an unknown or stopped
	// worker, a second hello): the pool then closes c.
	Connected(id sched.WorkerID, c *wire.Conn) *Worker
	// Started is called under the lock once local worker w's process runs
	// (Worker.PID); false kills it at once (w was given up meanwhile).
	Started(w *Worker) bool
	// Gone is called without the lock when w has ended: its connection
	// closed (its process exited, or for a local one 2 s passed), or its
	// process ended before it connected. Worker.Err says how the process
	// ended; bad is the message the handler refused (see Bad), if one
	// ended the connection. Called once per connection, and once for a
	// process that never connected; the owner ignores a second call.
	Gone(w *Worker, bad error)
}

// Pool is the driver's worker processes and their connections.
type Pool struct {
	cfg   Config
	dir   string // the session folder, holding the socket
	sock  string // the Unix socket local workers dial (task.EnvSocket)
	h     Handler
	mu    *sync.Mutex
	dirty []*Worker // workers with messages to write at Unlock (under mu)

	lnMu sync.Mutex
	lns  []net.Listener
	wg   sync.WaitGroup // every goroutine the pool starts

	stacks stackWaiters
}

// SocketDirPrefix begins the name of a pool's folder in the temporary
// directory (its node.sock): gray-<pid>.<start>-<random>, named after its
// process so that the next pool on the machine sweeps it once that
// process is gone.
const SocketDirPrefix = owned.SocketDirPrefix

// New returns a pool that reports to h, accepting local workers on a Unix
// socket in a folder of its own (removed by Close).
func New(cfg Config, h Handler) (*Pool, error) {
	if cfg.Output == nil {
		cfg.Output = os.Stdout
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("gray: finding the program's executable to start workers: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("gray: creating the worker log folder: %w", err)
		}
	}
	// Socket folders of killed drivers are swept here, by the next one.
	_, _ = owned.Sweep(os.TempDir(), SocketDirPrefix)
	dir, err := owned.MkdirTemp("", SocketDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("gray: creating the session folder: %w", err)
	}
	p := &Pool{cfg: cfg, h: h, mu: cfg.Lock, dir: dir, sock: filepath.Join(dir, "node.sock")}
	ln, err := net.Listen("unix", p.sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gray: listening on %s: %w", p.sock, err)
	}
	p.Listen(ln)
	return p, nil
}

// Listen accepts workers' connections on ln until Close, each served on a
// goroutine of its own. ln may authenticate (transfer.Listen, for the
// cluster's workers).
func (p *Pool) Listen(ln net.Listener) {
	p.lnMu.Lock()
	p.lns = append(p.lns, ln)
	p.lnMu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.serve(c)
		}
	}()
}

// badMessage is a message the handler refused: it ends the connection,
// and Gone reports it.
type badMessage struct{ err error }

func (b badMessage) Error() string { return b.err.Error() }
func (b badMessage) Unwrap() error { return b.err }

// Bad marks err, returned by a worker's message handler, as the message's
// fault (not the connection's): Handler.Gone gets it as bad.
func Bad(err error) error { return badMessage{err} }

// serve reads one worker's messages until its connection closes.
func (p *Pool) serve(c net.Conn) {
	defer p.wg.Done()
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
	p.mu.Lock()
	w := p.h.Connected(id, conn)
	p.Unlock()
	if w == nil {
		conn.Close()
		return
	}
	// The handler runs on this goroutine, or on one of the driver's that
	// waits for w's answer and reads it itself (Worker.Help).
	err = conn.Serve(w.handle)
	conn.Close()
	var bad badMessage
	if !errors.As(err, &bad) {
		bad.err = nil
	}
	p.gone(w, bad.err)
}

// gone reports w's end once its process exited, or, for a local one
// whose connection ended first, after at most 2 s (so its exit status can
// say how it died).
func (p *Pool) gone(w *Worker, bad error) {
	if w.local {
		select {
		case <-w.exited:
		case <-time.After(2 * time.Second):
		}
	}
	p.h.Gone(w, bad)
}

// Close stops accepting connections, ends those of ws (what is still
// queued for a busy worker is of no use now), waits up to 2 s for the
// local ones' processes to exit and kills the rest, waits for the pool's
// goroutines, and removes the pool's folder. A remote worker's node kills
// it when its connection ends.
func (p *Pool) Close(ws []*Worker) error {
	p.lnMu.Lock()
	for _, ln := range p.lns {
		ln.Close()
	}
	p.lnMu.Unlock()
	p.mu.Lock()
	conns := make([]*wire.Conn, 0, len(ws))
	for _, w := range ws {
		if w.conn != nil {
			conns = append(conns, w.conn)
		}
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Abort()
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, w := range ws {
		if !w.local {
			continue
		}
		select {
		case <-w.exited:
		case <-time.After(time.Until(deadline)):
		}
		select {
		case <-w.exited:
		default:
			p.mu.Lock()
			w.Kill()
			p.mu.Unlock()
		}
	}
	p.wg.Wait()
	return os.RemoveAll(p.dir)
}
