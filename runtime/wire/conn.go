// Package wire carries messages between the driver and its workers over a
// stream socket (a Unix domain socket on one machine).
//
// A frame is a 4-byte little-endian length, a 1-byte message type and the
// payload. Append adds frames to a buffer under a short lock; Flush writes
// everything accumulated in one system call. Whoever flushes first becomes
// the writer and keeps writing until the buffer is empty, while later
// flushers return at once, so a burst of messages from many goroutines costs
// few writes and no goroutine is started per message or per connection.
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

// Conn is one end of a framed connection. Append, Flush and Send are safe
// for concurrent use; Recv must be called from one goroutine.
type Conn struct {
	c net.Conn
	r *bufio.Reader

	mu      sync.Mutex
	buf     []byte
	spare   []byte
	writing bool // a goroutine is in Flush's write loop
	closed  bool
	err     error
	hdr     [5]byte
}

// New wraps c.
func New(c net.Conn) *Conn {
	return &Conn{
		c:     c,
		r:     bufio.NewReaderSize(c, 256<<10),
		buf:   make([]byte, 0, 64<<10),
		spare: make([]byte, 0, 64<<10),
	}
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
// returns at once: that writer picks the new frames up before it stops.
func (w *Conn) Flush() error {
	w.mu.Lock()
	if w.writing || len(w.buf) == 0 {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.writing = true
	for len(w.buf) > 0 && w.err == nil {
		out := w.buf
		w.buf = w.spare[:0]
		w.mu.Unlock()
		_, err := w.c.Write(out)
		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("wire: write: %w", err)
			w.closed = true
			w.buf = w.buf[:0]
			break
		}
		if cap(out) <= 4<<20 {
			w.spare = out
		} else {
			w.spare = make([]byte, 0, 64<<10) // don't keep a huge buffer alive
		}
	}
	w.writing = false
	err := w.err
	w.mu.Unlock()
	return err
}

// Buffered reports how many received bytes are waiting to be read, so a
// reader can batch its replies until its input runs dry.
func (w *Conn) Buffered() int { return w.r.Buffered() }

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

// Close flushes what was appended so far, then closes the socket.
func (w *Conn) Close() error {
	_ = w.Flush()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return w.c.Close()
}
