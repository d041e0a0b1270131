//go:build !linux

package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
)

var errNoShm = errors.New("the shared-memory step transport needs Linux")

func osYield()                           { runtime.Gosched() }
func mapFile(f *os.File) ([]byte, error) { return nil, errNoShm }
func unmap(mem []byte) error             { return nil }

// ShmSupported reports whether this platform has the shared-memory step
// transport.
const ShmSupported = false

// SendHello is not supported here.
func SendHello(uc *net.UnixConn, f *os.File) error { return errNoShm }

// ReadHello reads the count of the connection's first frame; there is no
// shared-memory hello on this platform, so fd is always -1.
func ReadHello(conn net.Conn) (first, fd int, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return 0, -1, err
	}
	return int(binary.LittleEndian.Uint32(hdr[:])), -1, nil
}
