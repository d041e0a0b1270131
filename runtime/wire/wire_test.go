package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestFramesRoundTrip(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := New(a), New(b)
	defer ca.Close()
	defer cb.Close()
	const n = 1000
	go func() {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n / 4 {
					_ = ca.Append(byte(g+1), func(p []byte) []byte {
						p = AppendUvarint(p, uint64(i))
						p = AppendString(p, "payload")
						return AppendFloat(p, 1.5)
					})
					_ = ca.Flush()
				}
			}()
		}
		wg.Wait()
	}()
	counts := map[byte]uint64{}
	for range n {
		typ, p, err := cb.Recv()
		if err != nil {
			t.Fatal(err)
		}
		d := Dec{B: p}
		i := d.Uvarint()
		s := d.String()
		f := d.Float()
		if d.Err != nil || s != "payload" || f != 1.5 || i != counts[typ] {
			t.Fatalf("frame type %d: %d %q %v %v (want index %d)", typ, i, s, f, d.Err, counts[typ])
		}
		counts[typ]++
	}
}

func TestCorruptInputIsAnError(t *testing.T) {
	d := Dec{B: []byte{0xff}}
	_ = d.Bytes()
	if d.Err == nil {
		t.Fatal("truncated bytes decoded")
	}
	d = Dec{B: []byte{200, 1}}
	if d.Count(); d.Err == nil {
		t.Fatal("a count larger than the payload was accepted")
	}
	a, b := net.Pipe()
	go func() {
		var hdr [5]byte
		binary.LittleEndian.PutUint32(hdr[:], 10)
		_, _ = a.Write(append(hdr[:], bytes.Repeat([]byte{1}, 3)...))
		a.Close()
	}()
	if _, _, err := New(b).Recv(); err == nil {
		t.Fatal("a short frame was accepted")
	}
}

// unixPair returns the two ends of a connected Unix socket, the kind the
// driver and its workers use.
func unixPair(t testing.TB) (*Conn, *Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = New(c)
	}
	return conns[0], conns[1]
}

// Sending to a peer that does not read returns at once, however much is
// sent; the frames arrive whole and in order once the peer reads, and
// Close delivers the last of them before the end of the stream.
func TestSendDoesNotWaitForPeer(t *testing.T) {
	forEachTransport(t, testSendDoesNotWaitForPeer)
}

func testSendDoesNotWaitForPeer(t *testing.T, a, b *Conn) {
	defer b.Close()
	const frames, size = 1024, 8 << 10 // 8 MiB: far beyond the socket's buffers
	sent := make(chan error, 1)
	go func() {
		for i := range frames {
			err := a.Send(7, func(p []byte) []byte {
				p = AppendUvarint(p, uint64(i))
				return append(p, make([]byte, size)...)
			})
			if err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Send blocked on a peer that was not reading")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	for i := range frames {
		typ, p, err := b.Recv()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		d := Dec{B: p}
		if got := d.Uvarint(); typ != 7 || got != uint64(i) || len(d.B) != size {
			t.Fatalf("frame %d: type %d, index %d, %d bytes", i, typ, got, len(d.B))
		}
	}
	if _, _, err := b.Recv(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// Close gives up on a peer that never reads instead of hanging.
func TestCloseDoesNotHangOnStuckPeer(t *testing.T) {
	forEachTransport(t, testCloseDoesNotHangOnStuckPeer)
}

func testCloseDoesNotHangOnStuckPeer(t *testing.T, a, b *Conn) {
	defer b.Close()
	closed := make(chan error, 1)
	go func() {
		for range 256 {
			if err := a.Send(1, func(p []byte) []byte { return append(p, make([]byte, 16<<10)...) }); err != nil {
				closed <- err
				return
			}
		}
		closed <- a.Close()
	}()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Send or Close hung on a peer that does not read")
	}
	if err := a.Send(1, nil); err == nil {
		t.Fatal("Send after Close succeeded")
	}
}
