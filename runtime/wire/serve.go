package wire

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"time"
)

// Serving a connection, and helping it.
//
// A synchronous call costs a thread wake-up at every hand-off between
// goroutines: the reader that gets a result readies the goroutine waiting
// for it, and the Go scheduler wakes a second thread to run it (a futex
// call, a scheduler spin, often a sleep of a few µs before it may steal
// the goroutine). On the shared-memory path the waiting goroutine can
// instead read the result itself: Help lets a goroutine that waits for
// something the peer will send take the connection's reading role for a
// while, spin on the ring, and handle the frames it finds (in order, with
// the same handler as Serve), until what it waits for has happened. A
// round trip then costs no system call and no wake-up on this side.
//
// The reading role is held by one goroutine at a time (Serve's or a
// helper), from a frame's first byte until its handler returned, so
// frames are handled one at a time and in order. Serve gives the role up
// at a frame boundary when a helper asks for it (want), and otherwise when
// it would sleep: it then sleeps in a read of the socket. While a helper
// holds the role it clears the ring's sleeping flag, so the peer writes no
// wake-up tokens; when it leaves it sets the flag again and, if frames
// came meanwhile, wakes Serve by a read deadline in the past (kick).
//
// Every holder leaves the same way: sleeping set, the role released, then
// the ring looked at once more. Those three are sequentially consistent
// atomics, as are the peer's store of the tail and its load of sleeping,
// so a frame the peer writes is always seen: by that last look (and
// handled, or passed to whoever holds the role now), or by the peer
// seeing sleeping set and waking Serve.

// Handler handles one frame; an error ends the connection's Serve with
// that error.
type Handler func(typ byte, payload []byte) error

// Serve reads frames and calls handle for each, in order, until the
// connection ends (the error of the read) or handle fails (its error).
// One goroutine serves a connection; others may Help it.
func (w *Conn) Serve(handle Handler) error {
	defer w.served.Store(true)
	if w.shm == nil {
		for {
			typ, payload, err := w.Recv()
			if err != nil {
				return err
			}
			if err := handle(typ, payload); err != nil {
				return err
			}
		}
	}
	s, r := w.shm, w.shm.rx
	for {
		if w.role.CompareAndSwap(0, 1) {
			if err := w.failedErr(); err != nil {
				w.role.Store(0)
				return err // a helper's handler failed
			}
			r.sleeping.Store(awake)
			err := w.handleFrames(handle, nil)
			r.sleeping.Store(sleepSocket)
			w.role.Store(0)
			if err != nil {
				return err
			}
			if r.avail() > 0 {
				continue // (a holder that took the role meanwhile sees them too)
			}
		}
		if w.beforeTokenRead != nil {
			w.beforeTokenRead()
		}
		_, err := w.c.Read(s.tok[:])
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !w.aborted.Load() {
			_ = w.c.SetReadDeadline(time.Time{}) // a kick: look at the ring again
			continue
		}
		// The socket ended: the peer is gone. Handle what it wrote
		// before, once the helper (if any) is done.
		w.rerr = err
		w.peerGone.Store(true)
		for !w.role.CompareAndSwap(0, 1) {
			runtime.Gosched()
		}
		if ferr := w.failedErr(); ferr != nil {
			w.role.Store(0)
			return ferr
		}
		for r.avail() > 0 {
			typ, payload, rerr := w.Recv()
			if rerr != nil {
				err = rerr
				break
			}
			if herr := handle(typ, payload); herr != nil {
				err = herr
				break
			}
		}
		w.role.Store(0)
		return err
	}
}

// Help handles the connection's frames on the calling goroutine until done
// reports true, for as long as the connection's spin allows (see adapt):
// it is for a goroutine that waits for the peer's answer, which it then
// reads itself instead of being woken by Serve's goroutine. It returns at
// once on a connection without the shared-memory path, whose peer is gone,
// or whose role another helper holds for longer than the spin. handle is
// Serve's handler; its error ends Serve with it. The caller checks done
// itself afterwards (and waits as it would without Help if it is false).
func (w *Conn) Help(handle Handler, done func() bool) {
	s := w.shm
	if s == nil || w.served.Load() || w.peerGone.Load() || w.aborted.Load() {
		return
	}
	if !w.role.CompareAndSwap(0, 1) {
		w.want.Add(1)
		got := false
		spinFor(s.spin, func() bool {
			got = w.role.Load() == 0 && w.role.CompareAndSwap(0, 1)
			return got || done()
		})
		w.want.Add(-1)
		if !got {
			return
		}
	}
	r := s.rx
	r.sleeping.Store(awake)
	if w.failedErr() == nil && !w.served.Load() {
		if err := w.handleFrames(handle, done); err != nil {
			w.fail(err)
		}
	}
	r.sleeping.Store(sleepSocket)
	w.role.Store(0)
	if r.avail() > 0 || w.failedErr() != nil {
		w.kick()
	}
}

// kick wakes Serve's goroutine from its read of the socket.
func (w *Conn) kick() { _ = w.c.SetReadDeadline(time.Unix(1, 0)) }

// fail records a helper's handler error for Serve to return.
func (w *Conn) fail(err error) { w.herr.CompareAndSwap(nil, &err) }

func (w *Conn) failedErr() error {
	if p := w.herr.Load(); p != nil {
		return *p
	}
	return nil
}

// handleFrames, holding the reading role, handles the frames in the ring,
// waiting for more as long as the spin catches them. Serve (done nil)
// reads a frame the peer is still writing to its end, sleeping if need be,
// and stops waiting when a helper wants the role. A helper (done set)
// takes only frames already whole in the ring, dozes (see ring.doze) when
// its spin missed, and stops once done reports true or dozeFor has passed.
// It returns a read's or the handler's error.
func (w *Conn) handleFrames(handle Handler, done func() bool) error {
	s, r := w.shm, w.shm.rx
	helper := done != nil
	sp, stop := &s.rd, func() bool { return r.avail() > 0 || w.want.Load() > 0 }
	var end time.Time
	if helper {
		sp, stop = &s.help, func() bool { return w.frameReady(true) || done() }
		end = time.Now().Add(dozeFor)
	}
	for {
		if helper && done() {
			return nil
		}
		if !w.frameReady(helper) {
			if helper && w.frameStuck() {
				return nil // Serve reads it, in pieces
			}
			start := time.Now()
			if sp.now > 0 {
				if spinFor(sp.now, stop) {
					if !w.frameReady(helper) {
						return nil // done, or a helper wants the role: not a wait that ended
					}
					sp.adapt(time.Since(start))
					continue
				}
				sp.adapt(sp.now + 1) // missed
			} else {
				sp.adapt(0) // counts a wait that did not spin
			}
			if !helper || !r.doze(time.Until(end), done) {
				return nil
			}
			continue
		}
		var typ byte
		var payload []byte
		var err error
		if helper {
			typ, payload = w.takeFrame()
		} else if typ, payload, err = w.Recv(); err != nil {
			return err
		}
		if err := handle(typ, payload); err != nil {
			return err
		}
	}
}

// frameReady reports whether a frame can be read without waiting: its
// start is in the ring, or with whole, all of it.
func (w *Conn) frameReady(whole bool) bool {
	r := w.shm.rx
	n := r.avail()
	if !whole || n < 5 {
		return n > 0
	}
	var hdr [5]byte
	r.peek(hdr[:])
	return uint64(n) >= 5+uint64(binary.LittleEndian.Uint32(hdr[:4]))
}

// frameStuck reports whether the frame begun in the ring cannot become
// whole there: it is larger than the ring, or the ring is full.
func (w *Conn) frameStuck() bool {
	r := w.shm.rx
	if r.avail() < 5 {
		return r.full()
	}
	var hdr [5]byte
	r.peek(hdr[:])
	return r.full() || 5+uint64(binary.LittleEndian.Uint32(hdr[:4])) > uint64(len(r.data))
}

// takeFrame reads a frame that frameReady(true) found whole in the ring.
func (w *Conn) takeFrame() (byte, []byte) {
	r := w.shm.rx
	var hdr [5]byte
	r.get(hdr[:])
	payload := make([]byte, binary.LittleEndian.Uint32(hdr[:4]))
	for got := 0; got < len(payload); {
		got += r.get(payload[got:])
	}
	return hdr[4], payload
}

// spinFor polls stop for about d; it reports whether stop became true. It
// never yields the thread to the system: on a busy machine that gives the
// core away for a whole time slice. Nor does it yield the processor to
// other goroutines (runtime.Gosched) unless this is the program's only
// one: Gosched wakes an idle thread (to run the yielded goroutine
// elsewhere), which then competes for the core the peer needs, so that on
// two cores a spin that yields every µs mostly misses. With GOMAXPROCS > 1
// a goroutine readied meanwhile runs on another processor.
func spinFor(d time.Duration, stop func() bool) bool {
	yield := runtime.GOMAXPROCS(0) == 1
	start := time.Now()
	for i := 1; ; i++ {
		if stop() {
			return true
		}
		if i%64 == 0 {
			el := time.Since(start)
			if el > d {
				return false
			}
			if yield && i%1024 == 0 {
				runtime.Gosched()
			}
		}
	}
}
