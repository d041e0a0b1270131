package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
)

var testToken = []byte("test-cluster-token")

// serve starts a Server of src on a fresh authenticated loopback listener
// and returns its address; it is stopped at cleanup.
func serve(t testing.TB, src Source) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, src)
}

func serveOn(t testing.TB, ln net.Listener, src Source) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(src).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func newClient(t testing.TB) *Client {
	c := NewClient(testToken)
	t.Cleanup(func() { c.Close() })
	return c
}

func openStore(t testing.TB, capacity int64) *objstore.Store {
	t.Helper()
	s, err := objstore.Open(objstore.Options{Dir: filepath.Join(t.TempDir(), "store"), Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func objectID(n uint64) ids.ObjectID { return ids.Put(ids.Root(1, true), n) }

func storeID(id ids.ObjectID) objstore.ID { return objstore.ID(id.String()) }

// putBytes stores data under id in s.
func putBytes(t testing.TB, s *objstore.Store, id ids.ObjectID, data []byte) {
	t.Helper()
	w, err := s.Create(storeID(id), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	copy(w.Bytes(), data)
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
}

// randomBytes returns n pseudo-random bytes: a random 64 KiB block repeated,
// each repetition starting with its index, so that bytes landing at the
// wrong offset do not match. (Cheap under the race detector.)
func randomBytes(n int, seed uint64) []byte {
	const block = 64 << 10
	r := rand.New(rand.NewPCG(seed, 7))
	pattern := make([]byte, block)
	for i := 0; i < block; i += 8 {
		binary.LittleEndian.PutUint64(pattern[i:], r.Uint64())
	}
	b := make([]byte, n)
	for i := 0; i < n; i += block {
		m := copy(b[i:], pattern)
		if m >= 8 {
			binary.LittleEndian.PutUint64(b[i:], uint64(i/block))
		}
	}
	return b
}

func TestFetchStoreToStore(t *testing.T) {
	src, dst := openStore(t, 64<<20), openStore(t, 128<<20)
	addr := serve(t, StoreSource(src))
	sink := StoreSink(dst)
	sizes := []int{0, 1, 4095, 100 << 10, ChunkSize, FirstRequestBytes, FirstRequestBytes + 17, FirstRequestBytes + 2*MinStreamBytes + 5}
	for _, streams := range []int{1, 3} {
		c := newClient(t)
		c.Streams = streams
		for i, size := range sizes {
			t.Run(fmt.Sprintf("streams=%d/%d", streams, size), func(t *testing.T) {
				id := objectID(uint64(streams*100 + i))
				want := randomBytes(size, uint64(i))
				putBytes(t, src, id, want)
				if err := c.Fetch(context.Background(), addr, ObjectKey(id), sink); err != nil {
					t.Fatal(err)
				}
				got, err := dst.Get(storeID(id))
				if err != nil {
					t.Fatal(err)
				}
				defer dst.Unpin(storeID(id))
				if !bytes.Equal(got, want) {
					t.Fatalf("fetched %d bytes differ from the %d sent", len(got), len(want))
				}
				// The server unpins right after its last write, which may be
				// just after the client has read everything.
				for deadline := time.Now().Add(5 * time.Second); src.Stats().PinnedBytes != 0; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the source still pins %d bytes after the transfer", src.Stats().PinnedBytes)
					}
				}
			})
		}
	}
}

func TestStoreSourcePinsWhileOpen(t *testing.T) {
	s := openStore(t, 1<<20)
	id := objectID(1)
	putBytes(t, s, id, make([]byte, 1000))
	data, release, err := StoreSource(s).Open(ObjectKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1000 || s.Stats().PinnedBytes != 1000 {
		t.Fatalf("open: %d bytes, %d pinned; want 1000 and 1000", len(data), s.Stats().PinnedBytes)
	}
	release()
	release() // twice is harmless
	if p := s.Stats().PinnedBytes; p != 0 {
		t.Fatalf("%d bytes still pinned after release", p)
	}
	for _, k := range []Key{ObjectKey(objectID(2)), "obj/zz", BlobKey([32]byte{})} {
		if _, _, err := StoreSource(s).Open(k); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%q): %v, want ErrNotFound", k, err)
		}
	}
}

func TestFetchNotFound(t *testing.T) {
	src, dst := openStore(t, 1<<20), openStore(t, 1<<20)
	addr := serve(t, StoreSource(src))
	c := newClient(t)
	k := ObjectKey(objectID(9))
	err := c.Fetch(context.Background(), addr, k, StoreSink(dst))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.Contains(msg, string(k)) || !strings.Contains(msg, addr) {
		t.Fatalf("error %q does not name the key and the address", msg)
	}
	if dst.Stats().Objects != 0 {
		t.Fatal("a missing object left something in the sink's store")
	}
	// The connection stays usable.
	putBytes(t, src, objectID(9), []byte("now it exists"))
	if err := c.Fetch(context.Background(), addr, k, StoreSink(dst)); err != nil {
		t.Fatal(err)
	}
}

func TestFetchWrongToken(t *testing.T) {
	addr := serve(t, StoreSource(openStore(t, 1<<20)))
	c := NewClient([]byte("not the token"))
	defer c.Close()
	err := c.Fetch(context.Background(), addr, ObjectKey(objectID(1)), StoreSink(openStore(t, 1<<20)))
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("got %v, want ErrUnauthorized", err)
	}
}

// countingSource counts Opens and holds each until gate is closed.
type countingSource struct {
	Source
	opens atomic.Int32
	gate  chan struct{}
}

func (s *countingSource) Open(k Key) ([]byte, func(), error) {
	s.opens.Add(1)
	<-s.gate
	return s.Source.Open(k)
}

func waiters(c *Client, k Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cl := range c.calls[k] {
		n += cl.waiters
	}
	return n
}

func TestConcurrentFetchesShareOneTransfer(t *testing.T) {
	src, dst := openStore(t, 16<<20), openStore(t, 16<<20)
	id := objectID(3)
	want := randomBytes(3<<20, 3)
	putBytes(t, src, id, want)
	cs := &countingSource{Source: StoreSource(src), gate: make(chan struct{})}
	addr := serve(t, cs)
	c := newClient(t)
	sink := StoreSink(dst)
	k := ObjectKey(id)

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- c.Fetch(context.Background(), addr, k, sink) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for waiters(c, k) < n { // every Fetch has joined before any byte moves
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d fetches joined", waiters(c, k), n)
		}
		time.Sleep(time.Millisecond)
	}
	close(cs.gate)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := cs.opens.Load(); got != 1 {
		t.Fatalf("the server opened the object %d times for %d concurrent fetches, want 1", got, n)
	}
	got, err := dst.Get(storeID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Unpin(storeID(id))
	if !bytes.Equal(got, want) {
		t.Fatal("fetched bytes differ")
	}
}

func TestFetchCancelled(t *testing.T) {
	src := openStore(t, 1<<20)
	putBytes(t, src, objectID(1), []byte("x"))
	cs := &countingSource{Source: StoreSource(src), gate: make(chan struct{})}
	addr := serve(t, cs)
	t.Cleanup(func() { close(cs.gate) }) // before the server's cleanup, which waits for Open
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Fetch(ctx, addr, ObjectKey(objectID(1)), StoreSink(openStore(t, 1<<20)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

// dyingServer answers each request on each authenticated connection with
// a header announcing an object of size bytes, sends half of the range
// asked for and closes the connection.
func dyingServer(t *testing.T, size uint64) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [3]byte
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				req := make([]byte, int(binary.LittleEndian.Uint16(hdr[1:]))+16)
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				off := binary.LittleEndian.Uint64(req[len(req)-16:])
				n := min(binary.LittleEndian.Uint64(req[len(req)-8:]), size-off)
				_, _ = c.Write(header(statusOK, size))
				_, _ = c.Write(make([]byte, n/2))
			}()
		}
	}()
	return ln.Addr().String()
}

func TestFetchServerDiesMidTransfer(t *testing.T) {
	for _, size := range []uint64{1 << 20, 3 * FirstRequestBytes} { // one stream; parallel streams
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			addr := dyingServer(t, size)
			dst := openStore(t, 32<<20)
			c := newClient(t)
			id := objectID(4)
			err := c.Fetch(context.Background(), addr, ObjectKey(id), StoreSink(dst))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("a transfer cut in half: %v, want io.ErrUnexpectedEOF", err)
			}
			if dst.Contains(storeID(id)) || dst.Stats().Used != 0 || dst.Stats().PinnedBytes != 0 {
				t.Fatalf("the half object is visible or still accounted: %+v", dst.Stats())
			}
			if left, _ := filepath.Glob(filepath.Join(dst.Dir(), string(storeID(id))+"*")); len(left) > 0 {
				t.Fatalf("the failed transfer left %v", left)
			}
			// The sink can receive the object again.
			if _, err := StoreSink(dst).Create(ObjectKey(id), 10); err != nil {
				t.Fatalf("creating the object again after the failed transfer: %v", err)
			}
		})
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func TestFetchReusesConnections(t *testing.T) {
	src, dst := openStore(t, 1<<20), openStore(t, 1<<20)
	ln, err := Listen("127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	addr := serveOn(t, cl, StoreSource(src))
	c := newClient(t)
	for i := range 5 {
		id := objectID(uint64(100 + i))
		putBytes(t, src, id, []byte{byte(i)})
		if err := c.Fetch(context.Background(), addr, ObjectKey(id), StoreSink(dst)); err != nil {
			t.Fatal(err)
		}
	}
	if n := cl.n.Load(); n != 1 {
		t.Fatalf("5 sequential fetches used %d connections, want 1", n)
	}
}

func TestFetchAfterServerRestart(t *testing.T) {
	src, dst := openStore(t, 1<<20), openStore(t, 1<<20)
	putBytes(t, src, objectID(1), []byte("one"))
	putBytes(t, src, objectID(2), []byte("two"))
	ln, err := Listen("127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(StoreSource(src)).Serve(ctx, ln) }()
	c := newClient(t)
	if err := c.Fetch(context.Background(), addr, ObjectKey(objectID(1)), StoreSink(dst)); err != nil {
		t.Fatal(err)
	}
	cancel() // the pooled connection dies with the server
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ln2, err := Listen(addr, testToken)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	serveOn(t, ln2, StoreSource(src))
	if err := c.Fetch(context.Background(), addr, ObjectKey(objectID(2)), StoreSink(dst)); err != nil {
		t.Fatalf("fetch after the server restarted: %v", err)
	}
}

func TestFetchAfterClose(t *testing.T) {
	c := NewClient(testToken)
	c.Close()
	if err := c.Fetch(context.Background(), "127.0.0.1:1", ObjectKey(objectID(1)), StoreSink(openStore(t, 1<<20))); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("got %v, want ErrClientClosed", err)
	}
}

// TestSharedFetchOutlivesACancelledCaller: when one of two callers sharing
// a transfer gives up, the other still gets the object, from the same
// single transfer.
func TestSharedFetchOutlivesACancelledCaller(t *testing.T) {
	src, dst := openStore(t, 1<<20), openStore(t, 1<<20)
	id := objectID(5)
	putBytes(t, src, id, []byte("shared"))
	cs := &countingSource{Source: StoreSource(src), gate: make(chan struct{})}
	addr := serve(t, cs)
	c := newClient(t)
	sink := StoreSink(dst)
	k := ObjectKey(id)

	ctx, cancel := context.WithCancel(context.Background())
	quitter := make(chan error, 1)
	go func() { quitter <- c.Fetch(ctx, addr, k, sink) }()
	stayer := make(chan error, 1)
	go func() { stayer <- c.Fetch(context.Background(), addr, k, sink) }()
	deadline := time.Now().Add(5 * time.Second)
	for waiters(c, k) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the second fetch did not join the first")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-quitter; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	close(cs.gate)
	if err := <-stayer; err != nil {
		t.Fatalf("remaining caller: %v", err)
	}
	if n := cs.opens.Load(); n != 1 {
		t.Fatalf("%d transfers, want 1", n)
	}
	if !dst.Contains(storeID(id)) {
		t.Fatal("the object did not arrive")
	}
}
