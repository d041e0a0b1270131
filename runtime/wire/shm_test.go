package wire

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/shmem"
)

// sharedPair returns the two ends of a Unix socket pair after the
// shared-memory handshake: a offered, b answered.
func sharedPair(t testing.TB) (*Conn, *Conn) {
	t.Helper()
	if on, _, _ := shmConfig(); !on { // a run that turned it off still tests it here
		t.Setenv(EnvShm, "on")
	}
	a, b := unixPair(t)
	if err := handshake(a, b); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// handshake runs Offer on a and Answer on b.
func handshake(a, b *Conn) error {
	answered := make(chan error, 1)
	go func() { answered <- b.Answer() }()
	err := a.Offer()
	if aerr := <-answered; err == nil {
		err = aerr
	}
	return err
}

// forEachTransport runs test over a plain Unix socket pair and over one
// with the shared-memory fast path.
func forEachTransport(t *testing.T, test func(t *testing.T, a, b *Conn)) {
	t.Run("socket", func(t *testing.T) {
		a, b := unixPair(t)
		test(t, a, b)
	})
	t.Run("shared", func(t *testing.T) {
		if !shmSupported(t) {
			t.Skip("no shared-memory fast path on this platform")
		}
		a, b := sharedPair(t)
		test(t, a, b)
	})
}

func shmSupported(t testing.TB) bool {
	f, mem, err := shmem.CreateRegion("gray-wire", regHeader)
	if err != nil {
		return false
	}
	f.Close()
	_ = unmap(mem)
	return true
}

func TestHandshakeChoosesTransport(t *testing.T) {
	supported := shmSupported(t)
	tests := []struct {
		name   string
		env    string
		pair   func(t testing.TB) (*Conn, *Conn)
		shared bool
	}{
		{"unix socket, default (on)", "", unixPair, supported},
		{"unix socket, on", "on", unixPair, supported},
		{"unix socket, spin 0", "0", unixPair, supported},
		{"unix socket, turned off", "off", unixPair, false},
		{"bad setting falls back to the socket", "fast please", unixPair, false},
		{"no descriptors (a pipe, like TCP)", "", func(testing.TB) (*Conn, *Conn) {
			a, b := net.Pipe()
			return New(a), New(b)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvShm, tt.env)
			a, b := tt.pair(t)
			defer a.Close()
			defer b.Close()
			if err := handshake(a, b); err != nil {
				t.Fatal(err)
			}
			if a.Shared() != tt.shared || b.Shared() != tt.shared {
				t.Fatalf("shared: offering end %v, answering end %v; want %v", a.Shared(), b.Shared(), tt.shared)
			}
			// Frames go both ways whatever the transport.
			go func() { _ = a.Send(3, func(p []byte) []byte { return append(p, "ping"...) }) }()
			if typ, p, err := b.Recv(); err != nil || typ != 3 || string(p) != "ping" {
				t.Fatalf("a→b: %d %q %v", typ, p, err)
			}
			go func() { _ = b.Send(4, func(p []byte) []byte { return append(p, "pong"...) }) }()
			if typ, p, err := a.Recv(); err != nil || typ != 4 || string(p) != "pong" {
				t.Fatalf("b→a: %d %q %v", typ, p, err)
			}
		})
	}
}

// Answer refuses a first frame that is not a transport frame, instead of
// taking a message for it.
func TestAnswerRejectsOtherFrames(t *testing.T) {
	a, b := unixPair(t)
	defer a.Close()
	defer b.Close()
	go func() { _ = a.Send(1, func(p []byte) []byte { return append(p, 9) }) }()
	if err := b.Answer(); err == nil {
		t.Fatal("Answer accepted a runtime message as the transport offer")
	}
}

// readerAsleep waits until r's reader has read what was written and sleeps
// (in a futex or the socket), so that the next write must wake it; it
// reports false if that did not happen within d.
func readerAsleep(r *ring, d time.Duration) bool {
	for end := time.Now().Add(d); r.sleeping.Load() == awake; {
		if time.Now().After(end) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// Frames of every size, including ones several times the ring, cross in
// both directions at once, whole and in order, while the readers sleep
// between bursts (spin 0) and while they spin.
func TestSharedFramesBothWays(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	for _, spin := range []string{"0", "20us"} {
		t.Run("spin "+spin, func(t *testing.T) {
			t.Setenv(EnvShm, spin)
			a, b := sharedPair(t)
			defer a.Close()
			defer b.Close()
			sizes := []int{0, 1, 100, ringSize - 5, ringSize, ringSize + 1, 3*ringSize + 7, 1000}
			frame := func(i, n int) []byte { return bytes.Repeat([]byte{byte(i*7 + n)}, n) }
			var wg sync.WaitGroup
			send := func(c *Conn) {
				defer wg.Done()
				for round := range 20 {
					for i, n := range sizes {
						if err := c.Send(byte(i+1), func(p []byte) []byte { return append(p, frame(i, n)...) }); err != nil {
							t.Error(err)
							return
						}
					}
					if round%5 == 0 && !readerAsleep(c.shm.tx, 10*time.Second) {
						t.Error("the reader never slept between bursts")
						return
					}
				}
			}
			recv := func(c *Conn) {
				defer wg.Done()
				for range 20 {
					for i, n := range sizes {
						typ, p, err := c.Recv()
						if err != nil {
							t.Error(err)
							return
						}
						if typ != byte(i+1) || !bytes.Equal(p, frame(i, n)) {
							t.Errorf("frame %d: type %d, %d bytes; want type %d, %d bytes", i, typ, len(p), i+1, n)
							return
						}
					}
				}
			}
			wg.Add(4)
			go send(a)
			go send(b)
			go recv(a)
			go recv(b)
			wg.Wait()
		})
	}
}

// When the peer closes (or its process dies), the reader gets what was
// already in the ring, then the end of the stream.
func TestSharedEndAfterLastFrame(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	a, b := sharedPair(t)
	defer b.Close()
	for i := range 10 {
		if err := a.Append(5, func(p []byte) []byte { return AppendUvarint(p, uint64(i)) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		typ, p, err := b.Recv()
		d := Dec{B: p}
		if err != nil || typ != 5 || d.Uvarint() != uint64(i) {
			t.Fatalf("frame %d: type %d, %v, %v", i, typ, p, err)
		}
	}
	if _, _, err := b.Recv(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

// A reader asleep on an idle connection wakes for the next frame.
func TestSharedIdleReaderWakes(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	a, b := sharedPair(t)
	defer a.Close()
	defer b.Close()
	for i := range 5 {
		got := make(chan error, 1)
		go func() {
			_, _, err := b.Recv()
			got <- err
		}()
		if !readerIn(b, sleepSocket, 10*time.Second) {
			t.Fatalf("round %d: the idle reader never fell asleep on the socket (still spinning?)", i)
		}
		if err := a.Send(1, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the sleeping reader was not woken", i)
		}
	}
}

// readerIn waits, for at most d, until c's reader is in state (awake,
// sleepFutex or sleepSocket), and reports whether it was seen there. A
// reader asleep on the socket has passed every other state: readerIn
// then reports false at once.
func readerIn(c *Conn, state uint32, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); runtime.Gosched() {
		switch c.shm.rx.sleeping.Load() {
		case state:
			return true
		case sleepSocket:
			return false
		}
	}
	return false
}

// BenchmarkRoundTrip measures a 64-byte request and its answer between two
// goroutines, over the socket and over the shared-memory fast path.
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"socket", "shared"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "socket" {
				b.Setenv(EnvShm, "off")
			}
			c1, c2 := unixPair(b)
			if err := handshake(c1, c2); err != nil {
				b.Fatal(err)
			}
			defer c1.Close()
			go func() {
				for {
					typ, p, err := c2.Recv()
					if err != nil {
						return
					}
					_ = c2.Send(typ, func(b []byte) []byte { return append(b, p...) })
				}
			}()
			msg := make([]byte, 64)
			b.ResetTimer()
			for range b.N {
				if err := c1.Send(1, func(p []byte) []byte { return append(p, msg...) }); err != nil {
					b.Fatal(err)
				}
				if _, _, err := c1.Recv(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A reader spins only while spinning catches the answers: a long wait stops
// it, and it tries again only after a growing number of waits.
func TestSpinAdapts(t *testing.T) {
	const max = 25 * time.Microsecond
	s := &spinner{max: max, now: max}
	s.adapt(5 * time.Microsecond) // caught while spinning
	if s.now != 10*time.Microsecond {
		t.Fatalf("after a 5µs wait: spin %v, want 10µs", s.now)
	}
	s.adapt(time.Second) // an idle connection
	if s.now != 0 {
		t.Fatalf("after a long wait: spin %v, want 0", s.now)
	}
	// Backoff: 1 wait without spinning, a probe that misses, 2, a probe...
	spins := 0
	for range 1000 {
		if s.now > 0 {
			spins++
		}
		s.adapt(time.Second)
	}
	if spins < 3 || spins > 12 {
		t.Fatalf("an idle connection spun on %d of 1,000 waits, want a few (backing off to 1 in 256)", spins)
	}
	s.now = max
	s.adapt(3 * time.Microsecond)
	if s.now == 0 || s.backoff != 0 {
		t.Fatalf("a caught answer did not restart spinning: spin %v, backoff %d", s.now, s.backoff)
	}
}
