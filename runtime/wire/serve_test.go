package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers every frame b receives with the same payload, until b ends.
func echo(b *Conn) {
	for {
		typ, p, err := b.Recv()
		if err != nil {
			return
		}
		if err := b.Send(typ, func(buf []byte) []byte { return append(buf, p...) }); err != nil {
			return
		}
	}
}

// ordered is a Handler that checks the frames come once each, in the
// order sent: each payload is the next number.
type ordered struct {
	mu     sync.Mutex
	next   uint64
	byHelp atomic.Int64 // frames handled on a helping goroutine
	err    error
	got    map[uint64]chan struct{}
}

func (o *ordered) handle(helper bool) Handler {
	return func(typ byte, p []byte) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		n := binary.LittleEndian.Uint64(p)
		if n != o.next && o.err == nil {
			o.err = fmt.Errorf("frame %d handled where %d was due", n, o.next)
		}
		o.next = n + 1
		if helper {
			o.byHelp.Add(1)
		}
		if ch := o.got[n]; ch != nil {
			close(ch)
		}
		return nil
	}
}

// Calls made from many goroutines, each sending a frame and helping the
// connection until its answer is handled, while Serve reads too: every
// answer is handled exactly once and in order, whoever reads it, over the
// socket (Help does nothing) and over the shared-memory path.
func TestHelpHandlesFramesOnceInOrder(t *testing.T) {
	forEachTransport(t, func(t *testing.T, a, b *Conn) {
		go echo(b)
		o := &ordered{got: map[uint64]chan struct{}{}}
		served := make(chan error, 1)
		go func() { served <- a.Serve(o.handle(false)) }()

		const callers, calls = 4, 300
		var sendMu sync.Mutex // numbers go out in order
		var seq uint64
		var wg sync.WaitGroup
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					ch := make(chan struct{})
					sendMu.Lock()
					n := seq
					seq++
					o.mu.Lock()
					o.got[n] = ch
					o.mu.Unlock()
					err := a.Send(1, func(buf []byte) []byte { return binary.LittleEndian.AppendUint64(buf, n) })
					sendMu.Unlock()
					if err != nil {
						t.Error(err)
						return
					}
					a.Help(o.handle(true), func() bool {
						select {
						case <-ch:
							return true
						default:
							return false
						}
					})
					select {
					case <-ch:
					case <-time.After(10 * time.Second):
						t.Errorf("frame %d was never handled", n)
						return
					}
				}
			}()
		}
		wg.Wait()
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.next != callers*calls {
			t.Fatalf("%d frames handled, want %d", o.next, callers*calls)
		}
		a.Close()
		b.Close()
		<-served
	})
}

// A lone synchronous caller reads its answers itself: with the peer
// answering at once, at least some answers are handled by Help, not by
// Serve's goroutine.
func TestHelpReadsTheAnswer(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	a, b := sharedPair(t)
	go echo(b)
	o := &ordered{got: map[uint64]chan struct{}{}}
	served := make(chan error, 1)
	go func() { served <- a.Serve(o.handle(false)) }()
	const calls = 2000
	for n := range uint64(calls) {
		ch := make(chan struct{})
		o.mu.Lock()
		o.got[n] = ch
		o.mu.Unlock()
		if err := a.Send(1, func(buf []byte) []byte { return binary.LittleEndian.AppendUint64(buf, n) }); err != nil {
			t.Fatal(err)
		}
		a.Help(o.handle(true), func() bool {
			select {
			case <-ch:
				return true
			default:
				return false
			}
		})
		<-ch
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.byHelp.Load() == 0 {
		t.Fatalf("none of %d answers was handled by the waiting goroutine", calls)
	}
	a.Close()
	b.Close()
	<-served
}

// A frame larger than the ring cannot be read by a helper (it takes whole
// frames only); it leaves it to Serve, which reads it in pieces.
func TestHelpLeavesLargeFramesToServe(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	a, b := sharedPair(t)
	got := make(chan int, 1)
	go func() {
		_ = a.Serve(func(typ byte, p []byte) error {
			got <- len(p)
			return nil
		})
	}()
	big := make([]byte, 3*ringSize)
	sent := make(chan error, 1)
	go func() { sent <- b.Send(1, func(buf []byte) []byte { return append(buf, big...) }) }()
	a.Help(func(byte, []byte) error {
		t.Error("the helper handled a frame larger than the ring")
		return nil
	}, func() bool { return len(got) > 0 })
	select {
	case n := <-got:
		if n != len(big) {
			t.Fatalf("got %d bytes, want %d", n, len(big))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the large frame was never handled")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
}

// An error of the handler on a helping goroutine ends Serve with it, as
// one on Serve's own goroutine does.
func TestHelpErrorEndsServe(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	a, b := sharedPair(t)
	defer b.Close()
	defer a.Close()
	bad := errors.New("bad message")
	served := make(chan error, 1)
	var handled atomic.Bool
	h := func(byte, []byte) error {
		handled.Store(true)
		return bad
	}
	// Serve waits for the role while the helper holds it, asleep in a
	// read of the socket.
	var reads atomic.Int32
	a.beforeTokenRead = func() { reads.Add(1) }
	a.role.Store(1)
	go func() { served <- a.Serve(h) }()
	waitReads := func(n int32) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); reads.Load() < n; {
			if time.Now().After(end) {
				t.Fatalf("Serve went to read the socket %d times, want %d", reads.Load(), n)
			}
			runtime.Gosched()
		}
	}
	waitReads(1)
	// Serve leaves the sleeping word alone while it cannot take the
	// role, so this says whether the Send below wakes it with a token.
	woken := a.shm.rx.sleeping.Load() == sleepSocket
	if err := b.Send(1, nil); err != nil {
		t.Fatal(err)
	}
	if woken {
		// It read the token, found the role still held and went back
		// to the socket: the frame is left for the helper below.
		waitReads(2)
	}
	a.role.Store(0)
	for end := time.Now().Add(10 * time.Second); !handled.Load() && time.Now().Before(end); {
		a.Help(h, handled.Load)
	}
	select {
	case err := <-served:
		if !errors.Is(err, bad) {
			t.Fatalf("Serve returned %v, want the handler's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not end after the helper's handler failed")
	}
}

// A reader that dozes in the futex is woken by the next write, and one
// that dozed past dozeFor sleeps on the socket and is woken by a token.
func TestDozingReaderWakes(t *testing.T) {
	if !shmSupported(t) {
		t.Skip("no shared-memory fast path on this platform")
	}
	t.Setenv(EnvShm, "0") // no spin: every wait dozes, then sleeps
	a, b := sharedPair(t)
	defer a.Close()
	defer b.Close()
	// The writer comes before the reader waits, while it is dozing in the
	// futex, then while it sleeps on the socket. A doze lasts dozeFor, so the writer may see
	// it too late: it tries again until it has woken a dozing reader.
	for _, state := range []uint32{awake, sleepFutex, sleepSocket} {
		for try := 0; ; try++ {
			got := make(chan error, 1)
			go func() {
				_, _, err := b.Recv()
				got <- err
			}()
			caught := readerIn(b, state, 10*time.Second)
			if err := a.Send(1, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("reader in state %d: it was not woken", state)
			}
			if caught {
				break
			}
			if try == 1000 {
				t.Fatalf("the reader was never seen in state %d", state)
			}
		}
	}
}
