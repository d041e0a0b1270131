// Package wire carries messages between the driver and its workers over a
// stream socket (a Unix domain socket on one machine).
//
// A frame is a 4-byte little-endian length, a 1-byte message type and the
// payload. Append adds frames to a buffer under a short lock; Flush writes
// everything accumulated in one system call. Whoever flushes first becomes
// the writer and keeps writing until the buffer is empty, while later
// flushers return at once, so a burst of messages from many goroutines costs
// few writes and no goroutine is started per message or per connection.
//
// Flush never waits for the peer: when the socket's buffer is full (the
// peer is busy and not reading), the rest is written by a goroutine the
// connection starts for that, which ends once the buffer is empty. So
// submitting many calls to a busy worker queues them instead of blocking
// the submitter.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxFrame bounds one frame, so a corrupt length never triggers a huge
// allocation.
const MaxFrame = 1 << 31

// ErrClosed is returned by Send on a closed connection.
var ErrClosed = errors.New("wire: connection closed")

// closeGrace bounds how long Close waits for the peer to read what is still
// buffered.
const closeGrace = 2 * time.Second

// Conn is one end of a framed connection. Append, Flush and Send are safe
// for concurrent use; Recv must be called from one goroutine, or instead
// Serve from one and Help from any number (see serve.go).
type Conn struct {
	c   net.Conn
	raw syscall.RawConn // for writes that must not block; nil if c has no descriptor
	r   *bufio.Reader

	mu      sync.Mutex
	idle    sync.Cond // signalled when writing ends
	buf     []byte    // frames appended since the last write began
	out     []byte    // the buffer being written
	pending []byte    // its part not yet written
	spare   []byte
	writing bool // a goroutine is in the write loop
	closed  bool
	err     error
	hdr     [5]byte

	// The one writer's non-blocking write: the function is made once, so
	// a write allocates nothing.
	tryFn  func(fd uintptr) bool
	tryP   []byte
	tryN   int
	tryErr error

	// The shared-memory fast path, once negotiated (see Offer); nil: the
	// socket carries the frames.
	shm      *shm
	rerr     error        // the socket's end, seen by the ring's reader
	aborted  atomic.Bool  // Abort was called: a writer waiting for room gives up
	peerGone atomic.Bool  // the ring's reader saw the socket end: nobody will free room
	deadline atomic.Int64 // set by Close: when a writer waiting for room gives up (UnixNano)

	// The reading role of the shared-memory path (see Serve and Help).
	role   atomic.Int32          // 1 while a goroutine reads and handles frames
	want   atomic.Int32          // helpers waiting for the role
	herr   atomic.Pointer[error] // a helper's handler failed: Serve returns it
	served atomic.Bool           // Serve returned: nobody handles frames any more
	// beforeTokenRead, set by tests before Serve starts, runs each time
	// Serve is about to sleep in a read of the socket.
	beforeTokenRead func()
}

// New wraps c.
func New(c net.Conn) *Conn {
	w := &Conn{
		c:     c,
		r:     bufio.NewReaderSize(c, 256<<10),
		buf:   make([]byte, 0, 64<<10),
		spare: make([]byte, 0, 64<<10),
	}
	w.idle.L = &w.mu
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
			w.tryFn = w.tryWrite
		}
	}
	return w
}

// Append adds one frame of type typ whose payload fn appends to its
// argument. fn runs under the connection's lock and must not block. The
// frame goes out at the next Flush.
func (w *Conn) Append(typ byte, fn func([]byte) []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		if w.err != nil {
			return w.err
		}
		return ErrClosed
	}
	start := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0, typ)
	if fn != nil {
		w.buf = fn(w.buf)
	}
	binary.LittleEndian.PutUint32(w.buf[start:], uint32(len(w.buf)-start-5))
	return nil
}

// Send appends a frame and flushes.
func (w *Conn) Send(typ byte, fn func([]byte) []byte) error {
	if err := w.Append(typ, fn); err != nil {
		return err
	}
	return w.Flush()
}

// Flush writes the buffered frames. If another goroutine is writing, it
// returns at once: that writer picks the new frames up before it stops. If
// the peer is not reading, the frames are written in the background and
// Flush returns at once too; a write error then shows in a later call.
func (w *Conn) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writing || len(w.buf) == 0 {
		return w.err
	}
	w.writing = true
	w.writeOut(false)
	return w.err
}

// FlushAsync is Flush with the write done by a goroutine of the
// connection's own, so the caller goes on at once (the frames are not held
// back: that goroutine starts writing as soon as it runs). While it writes,
// frames appended meanwhile join the next write, so a caller that appends
// and calls FlushAsync per message in a burst costs a few writes in all
// rather than one per message. The goroutine ends once the buffer is
// empty. A write error shows in a later call.
func (w *Conn) FlushAsync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writing || len(w.buf) == 0 || w.err != nil {
		return
	}
	w.writing = true
	go w.drain()
}

// writeOut writes until the buffer is empty. The caller holds mu and has
// set writing. Unless block is set, it hands the rest to a new goroutine as
// soon as a write would block.
func (w *Conn) writeOut(block bool) {
	for w.err == nil && (len(w.pending) > 0 || len(w.buf) > 0) {
		if len(w.pending) == 0 {
			w.out, w.pending = w.buf, w.buf
			w.buf = w.spare[:0]
		}
		p := w.pending
		w.mu.Unlock()
		n, err := w.write(p, block)
		w.mu.Lock()
		w.pending = w.pending[n:]
		if err != nil {
			w.err = fmt.Errorf("wire: write: %w", err)
			w.closed = true
			w.buf, w.pending = w.buf[:0], nil
			break
		}
		if len(w.pending) > 0 {
			if !block {
				go w.drain()
				return
			}
			continue
		}
		if cap(w.out) <= 4<<20 {
			w.spare = w.out[:0]
		} else {
			w.spare = make([]byte, 0, 64<<10) // don't keep a huge buffer alive
		}
		w.out = nil
	}
	w.writing = false
	w.idle.Broadcast()
}

// drain finishes a write the peer was too busy to take; it ends when the
// buffer is empty or the connection fails.
func (w *Conn) drain() {
	w.mu.Lock()
	w.writeOut(true)
	w.mu.Unlock()
}

// write writes p. Without block, it stops when the socket cannot take more
// and reports how much it wrote.
func (w *Conn) write(p []byte, block bool) (int, error) {
	if w.shm != nil {
		return w.ringWrite(p, block)
	}
	if block || w.raw == nil {
		return w.c.Write(p)
	}
	w.tryP, w.tryN, w.tryErr = p, 0, nil
	err := w.raw.Write(w.tryFn)
	n, werr := w.tryN, w.tryErr
	w.tryP = nil
	if werr == nil {
		werr = err
	}
	return n, werr
}

// tryWrite writes w.tryP to fd until done or the socket is full; it never
// asks the poller to wait.
func (w *Conn) tryWrite(fd uintptr) bool {
	for w.tryN < len(w.tryP) {
		m, err := syscall.Write(int(fd), w.tryP[w.tryN:])
		if m > 0 {
			w.tryN += m
		}
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			w.tryErr = err
			return true
		}
	}
	return true
}

// Buffered reports how many received bytes are waiting to be read, so a
// reader can batch its replies until its input runs dry.
func (w *Conn) Buffered() int {
	if w.shm != nil {
		return int(w.shm.rx.avail())
	}
	return w.r.Buffered()
}

// Recv reads the next frame. The payload is freshly allocated and may be
// retained by the caller.
func (w *Conn) Recv() (typ byte, payload []byte, err error) {
	var r io.Reader = w.r
	if w.shm != nil {
		r = shmReader{w}
	}
	if _, err := io.ReadFull(r, w.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(w.hdr[:4])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("wire: frame of %d bytes exceeds the limit", n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("wire: short frame: %w", err)
	}
	return w.hdr[4], payload, nil
}

// Abort closes the socket at once; frames not yet written are dropped.
func (w *Conn) Abort() error {
	w.aborted.Store(true)
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return w.c.Close()
}

// Close flushes what was appended so far, waiting at most closeGrace for
// the peer to read it, then closes the socket.
func (w *Conn) Close() error {
	_ = w.Flush()
	w.mu.Lock()
	if w.writing {
		w.deadline.Store(time.Now().Add(closeGrace).UnixNano())
		_ = w.c.SetWriteDeadline(time.Now().Add(closeGrace))
		for w.writing {
			w.idle.Wait()
		}
	}
	w.closed = true
	w.mu.Unlock()
	return w.c.Close()
}
