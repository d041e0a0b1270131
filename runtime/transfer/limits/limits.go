// Package limits measures the physical limits that bound moving an object
// from one node's shared-memory store to another's over loopback TCP, so
// that a transfer's speed can be reported as a ratio to them, measured in
// the same run:
//
//   - TCP: a raw copy over one loopback connection into a buffer that was
//     already touched (the wire's own limit: two copies, through the
//     kernel);
//   - TCPFreshShm: the same copy into a new shared-memory file (in
//     /dev/shm), written with pwrite, the cheapest way to fill fresh tmpfs
//     pages: what any store-to-store move into pages the receiver has not
//     used before must also pay;
//   - MemcpyFreshShm: writing the bytes from memory into a new
//     shared-memory file, without the network: the cost of fresh pages
//     alone.
//
// The fresh measures count creating and filling the file, not removing it
// (a fetched object is not freed as part of its fetch).
package limits

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// piece is how much TCPFreshShm reads before each pwrite: it stays in the
// CPU's cache between the two.
const piece = 256 << 10

// Copier copies size bytes over a loopback TCP connection that it keeps
// open between measures.
type Copier struct {
	size int
	dir  string
	src  []byte
	ln   net.Listener
	conn net.Conn
	wg   sync.WaitGroup // the sending goroutine
}

// ShmDir returns /dev/shm when it is a directory (shared memory, as a
// node's store), else the temporary directory.
func ShmDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// NewCopier connects a sender of size bytes (already in memory) to a
// receiver over 127.0.0.1, and writes its fresh files in dir. Close it.
func NewCopier(size int, dir string) (*Copier, error) {
	if size <= 0 {
		return nil, fmt.Errorf("limits: size %d: it must be positive", size)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("limits: listening on loopback: %w", err)
	}
	c := &Copier{size: size, dir: dir, src: make([]byte, size), ln: ln}
	for i := range c.src {
		c.src[i] = byte(i*7 + i>>12)
	}
	accepted := make(chan net.Conn, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		conn, err := ln.Accept()
		accepted <- conn
		if err != nil {
			return
		}
		defer conn.Close()
		var req [1]byte
		for {
			if _, err := io.ReadFull(conn, req[:]); err != nil {
				return // the receiver closed
			}
			if _, err := conn.Write(c.src); err != nil {
				return
			}
		}
	}()
	c.conn, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		c.wg.Wait()
		return nil, fmt.Errorf("limits: dialling loopback: %w", err)
	}
	if <-accepted == nil {
		c.Close()
		return nil, errors.New("limits: the loopback listener accepted nothing")
	}
	return c, nil
}

// Close ends the connection and waits for the sender.
func (c *Copier) Close() error {
	_ = c.ln.Close()
	if c.conn != nil {
		_ = c.conn.Close()
	}
	c.wg.Wait()
	return nil
}

// request asks the sender for the size bytes again.
func (c *Copier) request() error {
	if _, err := c.conn.Write([]byte{1}); err != nil {
		return fmt.Errorf("limits: asking for the bytes: %w", err)
	}
	return nil
}

// TCP copies the bytes over the connection into dst (at least size bytes;
// reuse it between calls so that its pages are already there) and returns
// how long it took.
func (c *Copier) TCP(dst []byte) (time.Duration, error) {
	if len(dst) < c.size {
		return 0, fmt.Errorf("limits: a buffer of %d bytes for %d", len(dst), c.size)
	}
	start := time.Now()
	if err := c.request(); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(c.conn, dst[:c.size]); err != nil {
		return 0, fmt.Errorf("limits: receiving: %w", err)
	}
	return time.Since(start), nil
}

// TCPFreshShm copies the bytes over the connection into a new file in the
// directory (fresh pages), written with pwrite through a small buffer, and
// returns how long it took, from creating the file until it is full.
func (c *Copier) TCPFreshShm() (time.Duration, error) {
	buf := make([]byte, piece)
	return c.fresh(func(f *os.File) error {
		if err := c.request(); err != nil {
			return err
		}
		for off := 0; off < c.size; {
			n, err := io.ReadFull(c.conn, buf[:min(piece, c.size-off)])
			if err != nil {
				return fmt.Errorf("limits: receiving: %w", err)
			}
			if _, err := f.WriteAt(buf[:n], int64(off)); err != nil {
				return fmt.Errorf("limits: writing: %w", err)
			}
			off += n
		}
		return nil
	})
}

// MemcpyFreshShm writes the bytes from memory into a new file in the
// directory (fresh pages) and returns how long it took, from creating the
// file until it is full.
func (c *Copier) MemcpyFreshShm() (time.Duration, error) {
	return c.fresh(func(f *os.File) error {
		for off := 0; off < c.size; off += piece {
			if _, err := f.WriteAt(c.src[off:min(off+piece, c.size)], int64(off)); err != nil {
				return fmt.Errorf("limits: writing: %w", err)
			}
		}
		return nil
	})
}

// fresh creates a file of size bytes in the directory, fills it with fill,
// and removes it; it returns how long creating and filling took.
func (c *Copier) fresh(fill func(*os.File) error) (time.Duration, error) {
	start := time.Now()
	f, err := os.CreateTemp(c.dir, "gray-limits-*")
	if err != nil {
		return 0, fmt.Errorf("limits: creating a file in %s: %w", c.dir, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := unix.Ftruncate(int(f.Fd()), int64(c.size)); err != nil {
		return 0, fmt.Errorf("limits: sizing %s: %w", f.Name(), err)
	}
	err = fill(f)
	return time.Since(start), err
}
