// Package wire carries messages between the driver and its workers over a
// stream socket (a Unix domain socket on one machine).
//
// A frame is a 4-byte little-endian length, a 1-byte message type and the
// payload. Writers append frames to a buffer under a lock and one flusher
// goroutine per connection writes whatever has accumulated in a single
// system call, so a burst of messages costs one write, and no goroutine is
// started per message.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// MaxFrame bounds one frame, so a corrupt length never triggers a huge
// allocation.
const MaxFrame = 1 << 31

// ErrClosed is returned by Send on a closed connection.
var ErrClosed = errors.New("wire: connection closed")

// Conn is one end of a framed connection. Send is safe for concurrent use;
// Recv must be called from one goroutine.
type Conn struct {
	c net.Conn
	r *bufio.Reader

	mu      sync.Mutex
	buf     []byte
	closed  bool
	err     error
	pending chan struct{} // capacity 1: "the buffer has data"
	done    chan struct{} // closed when the flusher exits
	hdr     [5]byte
}

// New wraps c and starts its flusher, which stops when the Conn is closed.
func New(c net.Conn) *Conn {
	w := &Conn{
		c:       c,
		r:       bufio.NewReaderSize(c, 256<<10),
		buf:     make([]byte, 0, 64<<10),
		pending: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go w.flusher()
	return w
}

// Send appends one frame of type typ whose payload fn appends to its
// argument. fn runs under the connection's lock and must not block.
func (w *Conn) Send(typ byte, fn func([]byte) []byte) error {
	w.mu.Lock()
	if w.closed {
		err := w.err
		w.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return err
	}
	start := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0, typ)
	if fn != nil {
		w.buf = fn(w.buf)
	}
	binary.LittleEndian.PutUint32(w.buf[start:], uint32(len(w.buf)-start-5))
	wake := start == 0
	w.mu.Unlock()
	if wake {
		select {
		case w.pending <- struct{}{}:
		default:
		}
	}
	return nil
}

func (w *Conn) flusher() {
	defer close(w.done)
	spare := make([]byte, 0, 64<<10)
	for range w.pending {
		w.mu.Lock()
		out := w.buf
		w.buf = spare[:0]
		closed := w.closed
		w.mu.Unlock()
		if len(out) > 0 {
			if _, err := w.c.Write(out); err != nil {
				w.fail(err)
				return
			}
		}
		if cap(out) <= 4<<20 {
			spare = out
		} else {
			spare = make([]byte, 0, 64<<10) // don't keep a huge buffer alive
		}
		if closed {
			return
		}
	}
}

func (w *Conn) fail(err error) {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		w.err = fmt.Errorf("wire: write: %w", err)
	}
	w.mu.Unlock()
	_ = w.c.Close()
}

// Recv reads the next frame. The payload is freshly allocated and may be
// retained by the caller.
func (w *Conn) Recv() (typ byte, payload []byte, err error) {
	if _, err := io.ReadFull(w.r, w.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(w.hdr[:4])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("wire: frame of %d bytes exceeds the limit", n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(w.r, payload); err != nil {
		return 0, nil, fmt.Errorf("wire: short frame: %w", err)
	}
	return w.hdr[4], payload, nil
}

// Close flushes what was sent so far, then closes the socket.
func (w *Conn) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		select {
		case w.pending <- struct{}{}:
		default:
		}
		<-w.done
	}
	return w.c.Close()
}
