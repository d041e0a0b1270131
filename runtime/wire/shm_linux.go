package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapFD maps all of the region file fd and closes fd.
func mapFD(fd int) ([]byte, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shared-memory region: %w", err)
	}
	if st.Size < regHeader || st.Size > 1<<30 {
		return nil, fmt.Errorf("shared-memory region of %d bytes (corrupt?)", st.Size)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the shared-memory region: %w", err)
	}
	return mem, nil
}

func unmap(mem []byte) error { return unix.Munmap(mem) }

func closeFD(fd int) { _ = unix.Close(fd) }

// canPassFD reports whether c can carry a file descriptor.
func canPassFD(c net.Conn) bool {
	_, ok := c.(*net.UnixConn)
	return ok
}

// sendFD writes an empty frame of type typ with f's descriptor attached.
func sendFD(c net.Conn, typ byte, f *os.File) error {
	var hdr [5]byte
	hdr[4] = typ
	_, _, err := c.(*net.UnixConn).WriteMsgUnix(hdr[:], unix.UnixRights(int(f.Fd())), nil)
	return err
}

// recvFD reads the connection's next frame with the descriptor sent with
// it, if any (-1 if none). Nothing may have been read from the socket
// through w.r yet.
func recvFD(w *Conn) (typ byte, payload []byte, fd int, err error) {
	uc, ok := w.c.(*net.UnixConn)
	if !ok {
		typ, payload, err = w.Recv()
		return typ, payload, -1, err
	}
	fd = -1
	var hdr [5]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	for got := 0; got < len(hdr); {
		n, oobn, _, _, err := uc.ReadMsgUnix(hdr[got:], oob)
		if oobn > 0 {
			for _, f := range parseRights(oob[:oobn]) {
				if fd < 0 {
					fd = f
				} else {
					closeFD(f)
				}
			}
		}
		if err != nil {
			if fd >= 0 {
				closeFD(fd)
			}
			return 0, nil, -1, err
		}
		if n == 0 {
			if fd >= 0 {
				closeFD(fd)
			}
			return 0, nil, -1, io.ErrUnexpectedEOF
		}
		got += n
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	if size > 1<<20 {
		if fd >= 0 {
			closeFD(fd)
		}
		return 0, nil, -1, fmt.Errorf("wire: transport frame of %d bytes", size)
	}
	payload = make([]byte, size)
	if _, err := io.ReadFull(w.r, payload); err != nil {
		if fd >= 0 {
			closeFD(fd)
		}
		return 0, nil, -1, err
	}
	return hdr[4], payload, fd, nil
}

// parseRights returns the descriptors of SCM_RIGHTS messages.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// peerHungUp reports whether the peer closed its end of the socket (or its
// process ended), without reading or waiting.
func peerHungUp(raw syscall.RawConn) bool {
	if raw == nil {
		return false
	}
	hup := false
	_ = raw.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(pfd, 0); err == nil && n > 0 {
			hup = pfd[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		}
	})
	return hup
}
