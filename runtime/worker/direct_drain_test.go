package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// TestDrainDirect plays the driver and a direct caller of a worker told
// to drain (MsgDirectDrain, the release of its actor): the caller is told,
// and the worker exits only once each caller's connection ended — after
// the caller answered and closed it, or, for a caller that does not
// answer, once the worker gave up waiting and closed it. Calls a caller
// sent in the same write as its answer run, and their results come back
// before it closes.
func TestDrainDirect(t *testing.T) {
	for _, c := range []struct {
		name    string
		callers int
		answer  bool // the callers answer MsgDirectDrained and close
		calls   int  // each answering caller's calls, sent in one write with its answer
	}{
		{"no caller connected: exits at once", 0, false, 0},
		{"callers answer and close", 2, true, 0},
		{"a caller never answers: closed after the wait", 1, false, 0},
		{"calls right before the answer run", 1, true, 3},
		{"two callers' calls right before their answers run", 2, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, dc, exited, addr := listening(t, 50*time.Millisecond)
			var conns []*wire.Conn
			for range c.callers {
				conn, err := dialDirect(addr, false)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Abort() })
				conns = append(conns, conn)
			}
			// A connection is registered for drains once its handshake is
			// done on the worker's side too.
			waitServed(t, w, len(conns))
			if err := dc.Send(task.MsgDirectDrain, nil); err != nil {
				t.Fatal(err)
			}
			for i, conn := range conns {
				if typ, _, err := conn.Recv(); err != nil || typ != task.MsgDirectDrain {
					t.Fatalf("caller %d got message type %d (%v), want MsgDirectDrain", i, typ, err)
				}
				if !c.answer {
					continue
				}
				// The calls and the answer in one write: the worker finds
				// the answer buffered behind the last call.
				var want []ids.TaskID
				for j := range c.calls {
					s := spec(task.KindFunc, echoFunc, fmt.Sprint(i, j))
					s.ID[1], s.ID[2] = byte(i), byte(j)
					want = append(want, s.ID)
					if err := conn.Append(task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) }); err != nil {
						t.Fatal(err)
					}
				}
				if err := conn.Send(task.MsgDirectDrained, nil); err != nil {
					t.Fatal(err)
				}
				for j, id := range want {
					got := recvResult(t, conn)
					if got != id {
						t.Fatalf("caller %d's result %d is of task %s, want %s", i, j, got, id)
					}
				}
				select {
				case code := <-exited:
					t.Fatalf("the worker exited (%d) while caller %d's connection was open", code, i)
				default:
				}
				conn.Close()
			}
			if !c.answer {
				for i, conn := range conns {
					if _, _, err := conn.Recv(); err == nil {
						t.Fatalf("caller %d, silent, got a message where its connection should end", i)
					}
				}
			}
			drained(t, exited, addr)
		})
	}
}

// listening returns a worker served by a test driver (dc) that listens
// for direct calls at addr, waiting wait for a caller's answer to a drain.
func listening(t *testing.T, wait time.Duration) (w *Worker, dc *wire.Conn, exited chan int, addr string) {
	t.Helper()
	w, dc, recv, exited := served(t)
	w.callee.drainWait = wait
	if err := dc.Send(task.MsgDirectListen, nil); err != nil {
		t.Fatal(err)
	}
	m := recv(task.MsgDirectAddr)
	addr = m.String()
	if m.Err != nil || addr == "" {
		t.Fatalf("listening: %q, %v", addr, m.Err)
	}
	return w, dc, exited, addr
}

// drained checks that a draining worker listening at addr exits, with
// code 0, and takes no caller's connection after.
func drained(t *testing.T, exited chan int, addr string) {
	t.Helper()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit once its callers' connections ended")
	}
	if conn, err := dialDirect(addr, false); err == nil {
		conn.Close()
		t.Fatal("a caller connected to a drained worker")
	}
}

// TestDrainCallerInHandshake: a caller whose connection's handshake has
// not ended when the drain reaches the worker (the driver drains once the
// callers given the address said they dialled, which they do once their
// side of the handshake ended: the worker's side may still be in it) is
// drained like a connected one: its calls run. One that goes away in the
// handshake does not hold the drain up. On the old code the worker
// registered a connection only after its handshake, and refused one that
// ended after the drain began: the caller's calls failed.
func TestDrainCallerInHandshake(t *testing.T) {
	for _, c := range []struct {
		name  string
		abort bool // the caller goes away in the handshake
	}{
		{"it then calls: its calls run", false},
		{"it goes away: the drain ends", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, dc, exited, addr := listening(t, 30*time.Second)
			nc, err := dial(addr)
			if err != nil {
				t.Fatal(err)
			}
			conn := wire.New(nc)
			t.Cleanup(func() { conn.Abort() })
			if err := conn.Send(task.MsgHello, nil); err != nil {
				t.Fatal(err)
			}
			waitServed(t, w, 1) // in its handshake: the worker offers, the caller has not answered
			if err := dc.Send(task.MsgDirectDrain, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the worker to drain", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.callee.draining
			})
			if c.abort {
				conn.Abort()
				drained(t, exited, addr)
				return
			}
			if err := conn.Answer(); err != nil {
				t.Fatalf("the handshake of a caller registered before the drain: %v", err)
			}
			if typ, _, err := conn.Recv(); err != nil || typ != task.MsgDirectDrain {
				t.Fatalf("caller got message type %d (%v), want MsgDirectDrain", typ, err)
			}
			s := spec(task.KindFunc, echoFunc, "late")
			if err := conn.Append(task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) }); err != nil {
				t.Fatal(err)
			}
			if err := conn.Send(task.MsgDirectDrained, nil); err != nil {
				t.Fatal(err)
			}
			if got := recvResult(t, conn); got != s.ID {
				t.Fatalf("result of task %s, want %s", got, s.ID)
			}
			conn.Close()
			drained(t, exited, addr)
		})
	}
}

// waitFor waits until cond holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitServed waits until w serves n callers' connections.
func waitServed(t *testing.T, w *Worker, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d callers' connections to be served", n), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.callee.conns) == n
	})
}

// recvResult returns the task of the next direct result on conn, failing
// the test if none comes within 30 s (a call the worker never ran).
func recvResult(t *testing.T, conn *wire.Conn) ids.TaskID {
	t.Helper()
	type frame struct {
		typ     byte
		payload []byte
		err     error
	}
	ch := make(chan frame, 1)
	go func() { // ends with the connection at the latest (Cleanup aborts it)
		typ, payload, err := conn.Recv()
		ch <- frame{typ, payload, err}
	}()
	select {
	case f := <-ch:
		if f.err != nil || f.typ != task.MsgResult {
			t.Fatalf("caller got message type %d (%v), want a result", f.typ, f.err)
		}
		var id ids.TaskID
		d := wire.Dec{B: f.payload}
		d.Fixed(id[:])
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no result within 30 s: the worker did not run a call sent before the caller's answer")
	}
	return ids.TaskID{}
}
