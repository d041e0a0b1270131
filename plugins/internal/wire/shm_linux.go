package wire

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// osYield gives the core to another runnable thread, if any.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// mapFile maps all of f, shared.
func mapFile(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shared step region: %w", err)
	}
	if st.Size() < shmHeader || st.Size() > 1<<34 {
		return nil, fmt.Errorf("shared step region of %d bytes (corrupt?)", st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the shared step region: %w", err)
	}
	return mem, nil
}

func unmap(mem []byte) error { return unix.Munmap(mem) }

// ShmSupported reports whether this platform has the shared-memory step
// transport.
const ShmSupported = true

// SendHello offers the region in f to the plugin at the other end of uc:
// a request of zero actions carrying f's descriptor (host side).
func SendHello(uc *net.UnixConn, f *os.File) error {
	_, _, err := uc.WriteMsgUnix([]byte{0, 0, 0, 0}, unix.UnixRights(int(f.Fd())), nil)
	return err
}

// ReadHello reads (plugin side) the count of the connection's first frame and the file
// descriptor sent with it, if any (-1 if none). first is -1 when the frame
// is the shared-memory hello.
func ReadHello(conn net.Conn) (first, fd int, err error) {
	fd = -1
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return -2, -1, nil // cannot carry descriptors: read everything as frames
	}
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	got := 0
	for got < len(hdr) {
		n, oobn, _, _, err := uc.ReadMsgUnix(hdr[got:], oob)
		if err != nil {
			return 0, -1, err
		}
		if oobn > 0 && fd < 0 {
			fd = parseRights(oob[:oobn])
		}
		got += n
	}
	count := int(binary.LittleEndian.Uint32(hdr[:]))
	if count == 0 && fd >= 0 {
		return -1, fd, nil
	}
	if fd >= 0 {
		unix.Close(fd) // a descriptor with an ordinary frame: not ours to keep
	}
	return count, -1, nil
}

// parseRights returns the first descriptor of an SCM_RIGHTS message and
// closes any others, or -1.
func parseRights(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1
	}
	fd := -1
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, f := range fds {
			if fd < 0 {
				fd = f
			} else {
				unix.Close(f)
			}
		}
	}
	return fd
}
