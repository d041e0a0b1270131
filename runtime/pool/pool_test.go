package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The pool's tests use real Unix sockets, and for the process paths real
// processes: the test binary started again as a worker (helperEnv), which
// dials the socket, says hello and answers a stacks signal.

const helperEnv = "GRAY_POOL_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// helper is a worker process: hello, then MsgStacks at each SIGUSR1, until
// the driver ends the connection.
func helper() int {
	id, _ := strconv.Atoi(os.Getenv(task.EnvWorker))
	c, err := net.Dial("unix", os.Getenv(task.EnvSocket))
	if err != nil {
		return 3
	}
	conn := wire.New(c)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, task.SignalStacks)
	if conn.Send(task.MsgHello, func(b []byte) []byte { return wire.AppendUvarint(b, uint64(id)) }) != nil || conn.Answer() != nil {
		return 4
	}
	go func() {
		for range sig {
			_ = conn.Send(task.MsgStacks, func(b []byte) []byte { return append(b, "stacks of "+strconv.Itoa(id)...) })
		}
	}()
	for {
		if _, _, err := conn.Recv(); err != nil {
			return 0
		}
	}
}

// owner plays the node: it knows its workers by ID and records what the
// pool tells it.
type owner struct {
	mu      sync.Mutex
	p       *Pool
	workers map[sched.WorkerID]*Worker
	refuse  bool
	frames  chan string    // "typ:payload" of every message handled
	gone    chan goneEvent // every Gone
	started chan *Worker   // every Started
	hellos  chan *Worker   // every worker attached
	fail    map[byte]error // a message type whose handler fails
}

type goneEvent struct {
	w   *Worker
	bad error
}

func newOwner(t *testing.T, cfg Config) (*owner, string) {
	t.Helper()
	o := &owner{workers: map[sched.WorkerID]*Worker{}, frames: make(chan string, 64),
		gone: make(chan goneEvent, 16), started: make(chan *Worker, 16), hellos: make(chan *Worker, 16), fail: map[byte]error{}}
	cfg.Lock = &o.mu
	p, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	o.p = p
	t.Cleanup(func() {
		o.mu.Lock()
		ws := make([]*Worker, 0, len(o.workers))
		for _, w := range o.workers {
			ws = append(ws, w)
		}
		o.mu.Unlock()
		if err := o.p.Close(ws); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(o.p.dir); !os.IsNotExist(err) {
			t.Errorf("the pool's folder is left after Close (%v)", err)
		}
	})
	return o, o.p.sock
}

func (o *owner) add(id sched.WorkerID, local bool) *Worker {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := NewWorker(id, local)
	o.workers[id] = w
	return w
}

// noProcess marks local worker w, which the test plays without Start, as
// having no process to wait for when the test ends (Close waits for a
// local worker's process to exit).
func noProcess(t *testing.T, w *Worker) {
	t.Cleanup(func() { close(w.exited) }) // before the pool's Close: cleanups run last first
}

func (o *owner) Connected(id sched.WorkerID, c *wire.Conn) *Worker {
	w := o.workers[id]
	if w == nil || w.Connected() || o.refuse {
		return nil
	}
	w.Attach(c, func(typ byte, payload []byte) error {
		if err := o.fail[typ]; err != nil {
			return Bad(err)
		}
		if typ == task.MsgStacks {
			o.p.GotStacks(w, payload)
			return nil
		}
		o.frames <- fmt.Sprintf("%d:%s", typ, payload)
		return nil
	})
	o.hellos <- w
	return w
}

func (o *owner) Started(w *Worker) bool { o.started <- w; return true }

func (o *owner) Gone(w *Worker, bad error) { o.gone <- goneEvent{w, bad} }

// wait is how long a test waits for an event before it fails; nothing
// asserts timings.
const wait = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
		panic("unreachable")
	}
}

// dial connects to sock as a worker and sends first (hello as worker id,
// unless first says otherwise).
func dial(t *testing.T, sock string, first byte, id int) *wire.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conn := wire.New(c)
	t.Cleanup(func() { conn.Close() })
	if err := conn.Send(first, func(b []byte) []byte { return wire.AppendUvarint(b, uint64(id)) }); err != nil {
		t.Fatal(err)
	}
	if first == task.MsgHello {
		if err := conn.Answer(); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// TestServe: a worker's hello attaches its connection, its messages reach
// its handler in order, and its end is reported once, saying which
// message was refused; a connection that is no worker's is closed.
func TestServe(t *testing.T) {
	refused := errors.New("no such message")
	for _, tc := range []struct {
		name      string
		first     byte // MsgHello, or another type
		id        int
		refuse    bool // the owner refuses the hello
		send      []byte
		failOn    byte
		connected bool
		frames    []string
		bad       error
	}{
		{name: "messages in order, then the end", first: task.MsgHello, id: 1, send: []byte{task.MsgPut, task.MsgDrop, task.MsgFree},
			connected: true, frames: []string{"5:a", "15:b", "16:c"}},
		{name: "a refused message ends the connection", first: task.MsgHello, id: 1, send: []byte{task.MsgPut, task.MsgDrop, task.MsgFree},
			failOn: task.MsgDrop, connected: true, frames: []string{"5:a"}, bad: refused},
		{name: "no hello first", first: task.MsgPut, id: 1},
		{name: "unknown worker", first: task.MsgHello, id: 7},
		{name: "refused by the owner", first: task.MsgHello, id: 1, refuse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, sock := newOwner(t, Config{})
			w := o.add(1, false)
			o.refuse = tc.refuse
			if tc.failOn != 0 {
				o.fail[tc.failOn] = refused
			}
			conn := dial(t, sock, tc.first, tc.id)
			if !tc.connected {
				// The pool closes a connection it does not serve.
				if _, _, err := conn.Recv(); err == nil {
					t.Fatal("the pool sent a message on a connection it should have closed")
				}
				o.mu.Lock()
				defer o.mu.Unlock()
				if w.Connected() {
					t.Fatal("the worker was attached")
				}
				return
			}
			for i, typ := range tc.send {
				payload := string(rune('a' + i))
				if err := conn.Send(typ, func(b []byte) []byte { return append(b, payload...) }); err != nil && tc.bad == nil {
					t.Fatal(err)
				}
			}
			for _, want := range tc.frames {
				if got := recv(t, o.frames, "message "+want); got != want {
					t.Fatalf("handled %q, want %q", got, want)
				}
			}
			if tc.bad == nil {
				conn.Close()
			}
			g := recv(t, o.gone, "Gone")
			if g.w != w || !errors.Is(g.bad, tc.bad) {
				t.Fatalf("Gone(%p, %v), want Gone(%p, %v)", g.w, g.bad, w, tc.bad)
			}
			select {
			case f := <-o.frames:
				t.Fatalf("handled %q after the refused message", f)
			default:
			}
		})
	}
}

// TestUnlockWrites: messages queued under the lock are written at Unlock,
// every worker's in the order queued; a worker queued twice is listed once.
func TestUnlockWrites(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			o, sock := newOwner(t, Config{})
			ws := []*Worker{o.add(1, local), o.add(2, local)}
			if local {
				noProcess(t, ws[0])
				noProcess(t, ws[1])
			}
			conns := []*wire.Conn{dial(t, sock, task.MsgHello, 1), dial(t, sock, task.MsgHello, 2)}
			// Attached once each has been handled: a frame from each
			// comes back through its handler.
			for i, c := range conns {
				_ = c.Send(task.MsgPut, nil)
				recv(t, o.frames, fmt.Sprintf("worker %d's first message", i+1))
			}
			o.mu.Lock()
			for round := range 3 {
				for i, w := range ws {
					msg := fmt.Sprintf("w%d-%d", i+1, round)
					if err := o.p.Append(w, task.MsgExec, func(b []byte) []byte { return append(b, msg...) }); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(o.p.dirty) != len(ws) {
				t.Fatalf("%d workers listed to flush, want %d", len(o.p.dirty), len(ws))
			}
			o.p.Unlock()
			o.mu.Lock()
			if len(o.p.dirty) != 0 || ws[0].dirty || ws[1].dirty {
				t.Fatal("Unlock left workers listed")
			}
			o.mu.Unlock()
			for i, c := range conns {
				for round := range 3 {
					typ, payload, err := c.Recv()
					if want := fmt.Sprintf("w%d-%d", i+1, round); err != nil || typ != task.MsgExec || string(payload) != want {
						t.Fatalf("worker %d read (%d, %q, %v), want %q", i+1, typ, payload, err, want)
					}
				}
			}
		})
	}
}

// TestAppendBeforeHello: a worker not yet connected has nothing to write
// to, which Append says.
func TestAppendBeforeHello(t *testing.T) {
	o, _ := newOwner(t, Config{})
	w := o.add(1, true)
	noProcess(t, w)
	o.mu.Lock()
	err := o.p.Append(w, task.MsgExit, nil)
	o.p.Unlock()
	if !errors.Is(err, wire.ErrClosed) {
		t.Fatalf("Append = %v, want wire.ErrClosed", err)
	}
}

// TestPlayedWorkerEnds: a worker that ends before it connects is reported
// gone once, with how it ended; one that connected is reported by its
// connection's end, once, after its process ended.
func TestPlayedWorkerEnds(t *testing.T) {
	crashed := errors.New("exit status 2")
	for _, connect := range []bool{false, true} {
		t.Run(fmt.Sprintf("connects=%v", connect), func(t *testing.T) {
			handled := make(chan struct{})
			o, _ := newOwner(t, Config{Play: func(sock string, id int) error {
				if !connect {
					return crashed
				}
				conn := dial(t, sock, task.MsgHello, id)
				_ = conn.Send(task.MsgPut, nil)
				<-handled // connected, as the pool saw it, before it ends
				conn.Close()
				return crashed
			}})
			w := o.add(3, true)
			o.mu.Lock()
			o.p.Start(w, false, nil)
			o.p.Unlock()
			if connect {
				recv(t, o.frames, "the worker's message")
				close(handled)
			}
			g := recv(t, o.gone, "Gone")
			<-w.Exited() // Gone comes after the end, for a local worker
			o.mu.Lock()
			err := w.Err()
			o.mu.Unlock()
			if g.w != w || g.bad != nil || err != crashed {
				t.Fatalf("Gone(%p, %v) with Err %v, want Gone(%p, nil) with %v", g.w, g.bad, err, w, crashed)
			}
			o.p.Close([]*Worker{w})
			select {
			case g := <-o.gone:
				t.Fatalf("a second Gone(%p, %v)", g.w, g.bad)
			default:
			}
		})
	}
}

// TestRemoteExited: a remote worker's node says it ended; before it
// connected, that is its end; said twice, it is recorded once.
func TestRemoteExited(t *testing.T) {
	o, _ := newOwner(t, Config{})
	w := o.add(sched.FirstWorker(2), false)
	why := errors.New("node 2 could not start it: no such file")
	o.p.Exited(w, why)
	o.p.Exited(w, errors.New("a later report"))
	for range 2 {
		if g := recv(t, o.gone, "Gone"); g.w != w {
			t.Fatalf("Gone(%p), want %p", g.w, w)
		}
	}
	<-w.Exited()
	if w.Err() != why {
		t.Fatalf("Err = %v, want the first report, %v", w.Err(), why)
	}
	if _, err := o.p.Stacks(context.Background(), w); err == nil || !strings.Contains(err.Error(), "another node") {
		t.Fatalf("Stacks of a remote worker = %v, want a refusal naming another node", err)
	}
}

// TestProcess starts real worker processes: each connects with the
// socket and number Start gave it, is Started with its PID, answers
// Stacks through its connection, and exits when Close ends it.
func TestProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o, _ := newOwner(t, Config{Executable: exe, Env: []string{helperEnv + "=1"}, Output: io.Discard})
	ws := []*Worker{o.add(1, true), o.add(2, true)}
	o.mu.Lock()
	for _, w := range ws {
		o.p.Start(w, false, nil)
	}
	o.p.Unlock()
	for range ws {
		w := recv(t, o.started, "Started")
		o.mu.Lock()
		pid := w.PID()
		o.mu.Unlock()
		if pid <= 0 {
			t.Fatalf("worker %d started with PID %d", w.ID(), pid)
		}
	}
	// A worker's hello comes once it handles the stacks signal.
	for range ws {
		recv(t, o.hellos, "a hello")
	}
	for _, w := range ws {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		s, err := o.p.Stacks(ctx, w)
		cancel()
		if want := fmt.Sprintf("stacks of %d", w.ID()); err != nil || s != want {
			t.Fatalf("Stacks = %q, %v; want %q", s, err, want)
		}
	}
	o.p.Close(ws)
	for _, w := range ws {
		select {
		case <-w.Exited():
		default:
			t.Fatalf("worker %d still runs after Close", w.ID())
		}
	}
}
