package transfer

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/objstore"
)

// TestDirSinkThenAdoptingSource: a worker (no store of its own) fetches an
// object into its node's store directory; the node, which never heard of
// it, serves it to a third party by adopting the file, and counts the
// bytes it served.
func TestDirSinkThenAdoptingSource(t *testing.T) {
	src, node := openStore(t, 16<<20), openStore(t, 16<<20)
	id := objectID(7)
	want := bytes.Repeat([]byte("gray"), 1<<18)
	w, err := src.Create(storeID(id), int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	copy(w.Bytes(), want)
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	ctx := context.Background()
	if err := c.Fetch(ctx, serve(t, StoreSource(src)), ObjectKey(id), DirSink(node.Dir())); err != nil {
		t.Fatal(err)
	}
	if node.Contains(storeID(id)) {
		t.Fatal("the node's store knows an object only a worker wrote")
	}
	if err := c.Fetch(ctx, serve(t, StoreSource(node)), ObjectKey(id), DirSink(t.TempDir())); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a plain StoreSource served an object it does not know: %v", err)
	}
	srv := NewServer(AdoptingSource(node))
	addr := serveServer(t, srv)
	dst := openStore(t, 16<<20)
	if err := c.Fetch(ctx, addr, ObjectKey(id), StoreSink(dst)); err != nil {
		t.Fatal(err)
	}
	got, err := dst.Get(storeID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Unpin(storeID(id))
	if !bytes.Equal(got, want) {
		t.Fatal("the object changed on its way")
	}
	if !node.Contains(storeID(id)) {
		t.Fatal("the node did not adopt the object it served")
	}
	if srv.Served() != int64(len(want)) {
		t.Fatalf("Served() = %d, want %d", srv.Served(), len(want))
	}
	// A second fetch into the same directory finds the file there.
	if err := c.Fetch(ctx, addr, ObjectKey(id), DirSink(node.Dir())); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("fetching over an existing file: %v, want ErrExists", err)
	}
}

// serveServer runs srv on a fresh authenticated loopback listener until
// cleanup and returns its address.
func serveServer(t testing.TB, srv *Server) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}
