//go:build !linux

package wire

import (
	"errors"
	"net"
	"os"
	"syscall"
)

var errNoShm = errors.New("the shared-memory fast path needs Linux")

func mapFD(fd int) ([]byte, error)                  { return nil, errNoShm }
func unmap(mem []byte) error                        { return nil }
func closeFD(fd int)                                {}
func canPassFD(c net.Conn) bool                     { return false }
func sendFD(c net.Conn, typ byte, f *os.File) error { return errNoShm }
func peerHungUp(raw syscall.RawConn) bool           { return false }

// recvFD reads the next frame; no descriptor travels on this platform.
func recvFD(w *Conn) (byte, []byte, int, error) {
	typ, payload, err := w.Recv()
	return typ, payload, -1, err
}
