package transfer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The pull protocol, after the handshake. The client sends requests one at
// a time on a connection and reads each response before the next:
//
//	request:  opFetch, key length (uint16 LE), key, offset, length (uint64 LE)
//	response: status, n (uint64 LE), then:
//	          statusOK: n is the object's size; then its bytes
//	          [offset, min(offset+length, n)), streamed;
//	          statusNotFound, statusError: a message of n bytes
//
// A client asks for the first part of an object, learns its size from the
// response, and asks for the rest in ranges over parallel connections.
const (
	opFetch        = 'F'
	statusOK       = 0
	statusNotFound = 1
	statusError    = 2
	headerLen      = 9
	maxMessage     = 64 << 10
)

// ChunkSize is how many bytes a Server writes, and a Client reads, per I/O
// deadline: a peer that makes no progress on a chunk for IOTimeout is cut
// off.
const ChunkSize = 4 << 20

// DefaultIOTimeout is the default IOTimeout of Servers and Clients.
const DefaultIOTimeout = 30 * time.Second

// Server serves the objects of a Source to Clients.
type Server struct {
	src Source
	// IOTimeout bounds each chunk written: a client that reads nothing for
	// this long is dropped, and the object it was sent released. Default
	// DefaultIOTimeout. Set it before Serve.
	IOTimeout time.Duration

	served atomic.Int64 // bytes of objects sent
}

// Served returns how many bytes of objects the server has sent.
func (s *Server) Served() int64 { return s.served.Load() }

// NewServer returns a server of src's objects.
func NewServer(src Source) *Server { return &Server{src: src} }

// Serve answers fetches on the connections ln accepts (use Listen, so that
// they are authenticated) until ctx ends or ln fails. It closes ln and every
// connection, waits for their goroutines, and returns nil if ctx ended, or
// the error of ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	defer func() {
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			_ = ln.Close()
			return fmt.Errorf("transfer: serving: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(c)
			_ = c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// serveConn answers the requests of one connection until it closes or
// fails.
func (s *Server) serveConn(c net.Conn) {
	r := bufio.NewReaderSize(c, 4096)
	var hdr [3]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return // the client closed its end (or the connection broke)
		}
		n := int(binary.LittleEndian.Uint16(hdr[1:]))
		if hdr[0] != opFetch || n == 0 || n > MaxKeyLen {
			return // not this protocol: drop it
		}
		req := make([]byte, n+16)
		if _, err := io.ReadFull(r, req); err != nil {
			return
		}
		off := binary.LittleEndian.Uint64(req[n:])
		length := binary.LittleEndian.Uint64(req[n+8:])
		if err := s.answer(c, Key(req[:n]), off, length); err != nil {
			return
		}
	}
}

// answer writes the response to a fetch of the bytes [off, off+length) of
// k.
func (s *Server) answer(c net.Conn, k Key, off, length uint64) error {
	data, release, err := s.src.Open(k)
	if err == nil && off > uint64(len(data)) {
		release()
		err = fmt.Errorf("transfer: %s: offset %d is beyond its %d bytes", k, off, len(data))
	}
	if err != nil {
		status := byte(statusError)
		if errors.Is(err, ErrNotFound) {
			status = statusNotFound
		}
		msg := err.Error()
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		return s.write(c, header(status, uint64(len(msg))), []byte(msg))
	}
	defer release()
	end := off + min(length, uint64(len(data))-off)
	if err := s.write(c, header(statusOK, uint64(len(data))), data[off:end]); err != nil {
		return err
	}
	s.served.Add(int64(end - off))
	return nil
}

func header(status byte, n uint64) []byte {
	h := make([]byte, headerLen)
	h[0] = status
	binary.LittleEndian.PutUint64(h[1:], n)
	return h
}

// write sends hdr and body in chunks of ChunkSize, each under its own
// deadline. The header goes out with the first chunk in one writev.
func (s *Server) write(c net.Conn, hdr, body []byte) error {
	timeout := s.IOTimeout
	if timeout <= 0 {
		timeout = DefaultIOTimeout
	}
	first := true
	for first || len(body) > 0 {
		n := min(len(body), ChunkSize)
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
		var err error
		if first {
			bufs := net.Buffers{hdr, body[:n]}
			_, err = bufs.WriteTo(c)
			first = false
		} else {
			_, err = c.Write(body[:n])
		}
		if err != nil {
			return err
		}
		body = body[n:]
	}
	return c.SetWriteDeadline(time.Time{})
}
