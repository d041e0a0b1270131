package wire

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the writes made to the connection it wraps.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestFlushAsyncCoalescesABurst checks that messages flushed with
// FlushAsync while the connection's writer is busy go out together, in
// order: a net.Pipe write blocks until the peer reads, and the peer starts
// reading only after the whole burst was appended, so the burst takes at
// most two writes.
func TestFlushAsyncCoalescesABurst(t *testing.T) {
	a, b := net.Pipe()
	cc := &countingConn{Conn: a}
	ca, cb := New(cc), New(b)
	t.Cleanup(func() { ca.Abort(); cb.Abort() })
	const n = 100
	for i := range n {
		if err := ca.Append(1, func(p []byte) []byte { return AppendUvarint(p, uint64(i)) }); err != nil {
			t.Fatal(err)
		}
		ca.FlushAsync()
	}
	for i := range n {
		typ, p, err := cb.Recv()
		if err != nil {
			t.Fatal(err)
		}
		d := Dec{B: p}
		if got := d.Uvarint(); typ != 1 || got != uint64(i) || d.Err != nil {
			t.Fatalf("frame %d: type %d, index %d, err %v", i, typ, got, d.Err)
		}
	}
	if w := cc.writes.Load(); w > 2 {
		t.Fatalf("a burst of %d frames took %d writes; want at most 2", n, w)
	}
}

// TestFlushAsyncSendsALoneFrame checks that FlushAsync does not hold a
// frame back waiting for more, over TCP as between nodes, and that Close
// after it still delivers everything.
func TestFlushAsyncSendsALoneFrame(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	ca, cb := New(d), New(s)
	t.Cleanup(func() { ca.Abort(); cb.Abort() })
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))

	if err := ca.Append(7, func(p []byte) []byte { return AppendString(p, "lone") }); err != nil {
		t.Fatal(err)
	}
	ca.FlushAsync()
	typ, p, err := cb.Recv()
	if err != nil {
		t.Fatalf("the lone frame did not arrive: %v", err)
	}
	if dec := (Dec{B: p}); typ != 7 || dec.String() != "lone" {
		t.Fatalf("got type %d payload %q", typ, p)
	}

	for i := range 50 {
		_ = ca.Append(8, func(p []byte) []byte { return AppendUvarint(p, uint64(i)) })
		ca.FlushAsync()
	}
	if err := ca.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		typ, p, err := cb.Recv()
		if err != nil {
			t.Fatalf("frame %d of the burst before Close: %v", i, err)
		}
		dec := Dec{B: p}
		if got := dec.Uvarint(); typ != 8 || got != uint64(i) {
			t.Fatalf("frame %d: type %d index %d", i, typ, got)
		}
	}
}
