package transfer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-ch
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// handshakePair runs both handshakes over a fresh connection.
func handshakePair(t *testing.T, serverTok, clientTok []byte) (clientErr, serverErr error) {
	t.Helper()
	c, s := tcpPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ServerHandshake(ctx, s, serverTok) }()
	clientErr = ClientHandshake(ctx, c, clientTok)
	return clientErr, <-done
}

func TestHandshake(t *testing.T) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name       string
		server     []byte
		client     []byte
		authorized bool
	}{
		{"same token", tok, tok, true},
		{"different token", tok, []byte("another-token"), false},
		{"one byte differs", tok, append(append([]byte(nil), tok[:31]...), 'X'), false},
		{"prefix of the token", tok, tok[:16], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cerr, serr := handshakePair(t, tc.server, tc.client)
			if tc.authorized {
				if cerr != nil || serr != nil {
					t.Fatalf("client: %v, server: %v; want both nil", cerr, serr)
				}
				return
			}
			if !errors.Is(cerr, ErrUnauthorized) || !errors.Is(serr, ErrUnauthorized) {
				t.Fatalf("client: %v, server: %v; want ErrUnauthorized on both sides", cerr, serr)
			}
		})
	}
}

func TestHandshakeWithoutToken(t *testing.T) {
	c, s := tcpPair(t)
	if err := ClientHandshake(context.Background(), c, nil); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("client without token: %v, want ErrUnauthorized", err)
	}
	if err := ServerHandshake(context.Background(), s, []byte{}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("server without token: %v, want ErrUnauthorized", err)
	}
	if _, err := Listen("127.0.0.1:0", nil); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Listen without token: %v, want ErrUnauthorized", err)
	}
}

// recorder keeps a copy of everything written through a connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out.Write(p)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

func TestReplayedTranscriptFails(t *testing.T) {
	tok := []byte("secret-token")
	// Record what a genuine client sends in a successful handshake.
	c, s := tcpPair(t)
	rec := &recorder{Conn: c}
	done := make(chan error, 1)
	go func() { done <- ServerHandshake(context.Background(), s, tok) }()
	if err := ClientHandshake(context.Background(), rec, tok); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	transcript := rec.out.Bytes()

	// An eavesdropper replays it to the server on a new connection.
	c2, s2 := tcpPair(t)
	go func() { done <- ServerHandshake(context.Background(), s2, tok) }()
	if _, err := c2.Write(transcript); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("replayed transcript: server said %v, want ErrUnauthorized", err)
	}
	var verdict [1]byte
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c2, make([]byte, nonceLen+macLen)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c2, verdict[:]); err != nil || verdict[0] != verdictRefused {
		t.Fatalf("verdict %v, %v; want refused", verdict[0], err)
	}
}

func TestHandshakeContextEnds(t *testing.T) {
	c, server := tcpPair(t) // the server end never answers
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancel once the handshake has said hello and waits
		_, _ = io.ReadFull(server, make([]byte, len(magic)+nonceLen))
		cancel()
	}()
	start := time.Now()
	err := ClientHandshake(ctx, c, []byte("tok"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if time.Since(start) > DefaultHandshakeTimeout {
		t.Fatal("the cancelled handshake waited for the default timeout")
	}
}

func listenT(t *testing.T, lc ListenConfig, tok []byte) net.Listener {
	t.Helper()
	ln, err := lc.Listen("127.0.0.1:0", tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func acceptOne(ln net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func TestListenDial(t *testing.T) {
	tok := []byte("cluster-token")
	ln := listenT(t, ListenConfig{}, tok)
	accepted := acceptOne(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String(), tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	if s == nil {
		t.Fatal("Accept failed")
	}
	defer s.Close()
	// The connection carries data both ways after the handshake.
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("server read %q, %v", buf, err)
	}
	if _, err := s.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
}

func TestListenRefusesWrongToken(t *testing.T) {
	rejected := make(chan error, 1)
	ln := listenT(t, ListenConfig{OnReject: func(_ net.Addr, err error) { rejected <- err }}, []byte("right"))
	accepted := acceptOne(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := Dial(ctx, ln.Addr().String(), []byte("wrong")); !errors.Is(err, ErrUnauthorized) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial with the wrong token: %v, want ErrUnauthorized", err)
	}
	if err := <-rejected; !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("listener rejected with %v, want ErrUnauthorized", err)
	}
	select {
	case c := <-accepted:
		t.Fatalf("Accept returned an unauthenticated connection from %v", c.RemoteAddr())
	case <-time.After(50 * time.Millisecond):
	}
}

// TestListenDropsBadClients: a client sending garbage and a client sending
// nothing are both closed by the listener, and neither delays a genuine
// client that comes after them.
func TestListenDropsBadClients(t *testing.T) {
	tok := []byte("tok")
	rejected := make(chan error, 2)
	ln := listenT(t, ListenConfig{HandshakeTimeout: 300 * time.Millisecond, OnReject: func(_ net.Addr, err error) { rejected <- err }}, tok)
	addr := ln.Addr().String()

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	if _, err := garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n-----------------")); err != nil {
		t.Fatal(err)
	}

	// A genuine client is accepted while the silent one is still pending.
	accepted := acceptOne(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	good, err := Dial(ctx, addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	select {
	case s := <-accepted:
		if s == nil {
			t.Fatal("Accept failed")
		}
		s.Close()
	case <-time.After(3 * time.Second):
		t.Fatal("a genuine client was not accepted while a silent one was pending")
	}

	// Both bad clients are closed by the server (not left hanging).
	for _, c := range []net.Conn{garbage, silent} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		// EOF, or a reset when the server closed with unread garbage.
		var ne net.Error
		if _, err := io.ReadAll(c); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server did not close a bad client: %v", err)
		}
	}
	errs := []error{<-rejected, <-rejected}
	var unauthorized, timedOut bool
	for _, err := range errs {
		var ne net.Error
		unauthorized = unauthorized || errors.Is(err, ErrUnauthorized)
		timedOut = timedOut || errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
	}
	if !unauthorized || !timedOut {
		t.Fatalf("rejections %v: want one ErrUnauthorized (garbage) and one timeout (silent)", errs)
	}
}

func TestListenerClose(t *testing.T) {
	ln := listenT(t, ListenConfig{}, []byte("tok"))
	// A pending handshake does not keep Close waiting.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	accepted := acceptOne(ln)
	// The handshake is pending once it holds its slot and the accept
	// loop has taken the next one.
	for deadline := time.Now().Add(10 * time.Second); len(ln.(*listener).sem) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener never started the connection's handshake")
		}
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if s := <-accepted; s != nil {
		t.Fatal("Accept returned a connection after Close")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}
