package transfer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

const (
	// DefaultStreams is the default of Client.Streams.
	DefaultStreams = 4
	// FirstRequestBytes is how much of an object the first request asks
	// for: a smaller object comes whole in one round trip, and a larger
	// one's size is known from that response, so the rest can be asked for
	// over parallel connections.
	FirstRequestBytes = 8 << 20
	// MinStreamBytes is the least a parallel range carries.
	MinStreamBytes = 4 << 20
)

// transfer fetches k from addr into dst: the first request on one
// connection learns the size, the sink makes room, and the rest of a large
// object comes over parallel connections straight into that room.
func (c *Client) transfer(ctx context.Context, addr string, k Key, dst Sink) error {
	ctx, cancel := context.WithCancel(ctx) // ends every stream when one fails
	defer cancel()
	first, size, err := c.open(ctx, addr, k, 0, FirstRequestBytes)
	if err != nil {
		return err
	}
	if size > 1<<50 {
		first.done(false)
		return first.fail("reading the response", fmt.Errorf("implausible size %d", size))
	}
	room, err := dst.Create(k, int64(size))
	if err != nil {
		first.done(false)
		return first.fail("making room for "+human(int64(size)), err)
	}
	if err := room.check(size); err != nil {
		first.done(false)
		dst.Abort(k)
		return first.fail("making room", err)
	}
	if err := c.receive(ctx, cancel, first, addr, k, room, size); err != nil {
		dst.Abort(k)
		return err
	}
	if err := dst.Commit(k); err != nil {
		dst.Abort(k)
		return fmt.Errorf("transfer: fetching %s from %s: committing: %w", k, addr, err)
	}
	return nil
}

// check reports a room that cannot take size bytes.
func (r Room) check(size uint64) error {
	switch {
	case r.Buf != nil && uint64(len(r.Buf)) != size:
		return fmt.Errorf("the sink gave %d bytes for %d", len(r.Buf), size)
	case r.Buf == nil && r.At == nil && size > 0:
		return fmt.Errorf("the sink gave no room for %d bytes", size)
	}
	return nil
}

// receive reads the object, size bytes, into room: its first
// FirstRequestBytes from first, the rest in ranges over parallel streams.
func (c *Client) receive(ctx context.Context, cancel context.CancelFunc, first *stream, addr string, k Key, room Room, size uint64) error {
	n0 := min(size, FirstRequestBytes)
	rest := size - n0
	streams := c.Streams
	if streams <= 0 {
		streams = DefaultStreams
	}
	extra := min(uint64(streams-1), rest/MinStreamBytes)
	if rest > 0 && extra == 0 {
		extra = 1
	}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error // the cause; later errors are mostly its consequences
	)
	failed := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for i := range extra {
		off := n0 + rest*i/extra
		end := n0 + rest*(i+1)/extra
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, sz, err := c.open(ctx, addr, k, off, end-off)
			if err != nil {
				failed(err)
				return
			}
			if sz != size {
				s.done(false)
				failed(s.fail("reading a range", fmt.Errorf("the object is %d bytes now, %d before", sz, size)))
				return
			}
			err = s.read(room, off, end, size)
			s.done(err == nil)
			if err != nil {
				failed(err)
			}
		}()
	}
	err := first.read(room, 0, n0, size)
	first.done(err == nil)
	if err != nil {
		failed(err)
	}
	wg.Wait()
	return firstErr
}

// stream is one request in progress on a connection.
type stream struct {
	c     *Client
	conn  net.Conn
	addr  string
	k     Key
	ctx   context.Context
	stop  func() bool // ends the ctx watcher; false if it fired
	n     uint64      // bytes of the response body still to read
	reuse bool
}

// open sends a request for the bytes [off, off+n) of k (fewer at the end
// of the object) and reads the response's header, returning the stream to
// read them from and the object's size. A pooled connection that turns out
// dead before the response begins (the server restarted, say) is replaced
// by a fresh one once. A missing object is ErrNotFound (the stream is then
// finished).
func (c *Client) open(ctx context.Context, addr string, k Key, off, n uint64) (*stream, uint64, error) {
	for attempt := 0; ; attempt++ {
		conn, pooled, err := c.conn(ctx, addr)
		if err != nil {
			return nil, 0, fmt.Errorf("transfer: fetching %s: %w", k, err)
		}
		s := &stream{c: c, conn: conn, addr: addr, k: k, ctx: ctx}
		s.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
		size, started, err := s.request(off, n)
		if err == nil {
			return s, size, nil
		}
		s.done(s.reuse) // kept after a complete error response
		if started || !pooled || attempt > 0 || ctx.Err() != nil {
			return nil, 0, err
		}
	}
}

func (c *Client) ioTimeout() time.Duration {
	if c.IOTimeout > 0 {
		return c.IOTimeout
	}
	return DefaultIOTimeout
}

// fail wraps err with what the stream was doing, and ctx's error if it
// ended.
func (s *stream) fail(what string, err error) error {
	err = fmt.Errorf("transfer: fetching %s from %s: %s: %w", s.k, s.addr, what, err)
	if s.ctx.Err() != nil && !errors.Is(err, s.ctx.Err()) {
		err = fmt.Errorf("%w (%w)", s.ctx.Err(), err)
	}
	return err
}

// request sends the request and reads the header. started reports whether
// any of the response arrived.
func (s *stream) request(off, n uint64) (size uint64, started bool, err error) {
	req := make([]byte, 3+len(s.k)+16)
	req[0] = opFetch
	binary.LittleEndian.PutUint16(req[1:], uint16(len(s.k)))
	copy(req[3:], s.k)
	binary.LittleEndian.PutUint64(req[3+len(s.k):], off)
	binary.LittleEndian.PutUint64(req[3+len(s.k)+8:], n)
	_ = s.conn.SetDeadline(time.Now().Add(s.c.ioTimeout()))
	if _, err := s.conn.Write(req); err != nil {
		return 0, false, s.fail("sending the request", err)
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(s.conn, hdr[:]); err != nil {
		return 0, false, s.fail("reading the response", err)
	}
	m := binary.LittleEndian.Uint64(hdr[1:])
	switch hdr[0] {
	case statusOK:
		if off > m {
			return 0, true, s.fail("reading the response", fmt.Errorf("asked for offset %d of %d bytes", off, m))
		}
		s.n = min(n, m-off)
		return m, true, nil
	case statusNotFound, statusError:
		if m > maxMessage {
			return 0, true, s.fail("reading the response", fmt.Errorf("message of %d bytes is too long (not a Gray transfer server?)", m))
		}
		msg := make([]byte, m)
		if _, err := io.ReadFull(s.conn, msg); err != nil {
			return 0, true, s.fail("reading the server's error", err)
		}
		s.reuse = true
		if hdr[0] == statusNotFound {
			return 0, true, fmt.Errorf("transfer: fetching %s from %s: %w (the server said: %s)", s.k, s.addr, ErrNotFound, msg)
		}
		return 0, true, fmt.Errorf("transfer: fetching %s from %s: the server failed: %s", s.k, s.addr, msg)
	}
	return 0, true, s.fail("reading the response", fmt.Errorf("unknown status %d (not a Gray transfer server?)", hdr[0]))
}

// read reads the response body, which must be the bytes [off, end) of an
// object of size bytes, into room, in chunks under the I/O deadline.
func (s *stream) read(room Room, off, end, size uint64) error {
	if end-off != s.n {
		return s.fail("reading", fmt.Errorf("the server sends %d bytes at offset %d, want %d", s.n, off, end-off))
	}
	var piece []byte // for room.At: what one read takes, then one write
	if room.Buf == nil && end > off {
		p := pieces.Get().(*[]byte)
		defer pieces.Put(p)
		piece = *p
	}
	for done := off; done < end; {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.c.ioTimeout()))
		var err error
		if room.Buf != nil {
			var m int
			m, err = io.ReadFull(s.conn, room.Buf[done:min(done+ChunkSize, end)])
			done += uint64(m)
		} else {
			done, err = s.readAt(room.At, piece, done, min(done+ChunkSize, end))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return s.fail(fmt.Sprintf("receiving (%d of the %d bytes at offset %d of %d came)", done-off, end-off, off, size), err)
		}
	}
	s.n = 0
	s.reuse = true
	return nil
}

// pieces holds the buffers that bytes for a Room's At pass through: small
// enough to stay in the CPU's cache between the read and the write.
var pieces = sync.Pool{New: func() any { b := make([]byte, pieceSize); return &b }}

const pieceSize = 256 << 10

// readAt reads the bytes [off, end) into w through piece, and returns how
// far it got.
func (s *stream) readAt(w io.WriterAt, piece []byte, off, end uint64) (uint64, error) {
	for off < end {
		m, err := io.ReadFull(s.conn, piece[:min(uint64(len(piece)), end-off)])
		if m > 0 {
			if _, werr := w.WriteAt(piece[:m], int64(off)); werr != nil {
				return off, fmt.Errorf("writing into the sink: %w", werr)
			}
			off += uint64(m)
		}
		if err != nil {
			return off, err
		}
	}
	return off, nil
}

// done ends the stream: its connection goes back to the pool if the
// response was read whole and ctx did not cut it, else it is closed.
func (s *stream) done(ok bool) {
	if s.stop() && ok && s.reuse && s.n == 0 {
		_ = s.conn.SetDeadline(time.Time{})
		s.c.putIdle(s.addr, s.conn)
		return
	}
	_ = s.conn.Close()
}
