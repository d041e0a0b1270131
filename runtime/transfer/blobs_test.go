package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func newBlobs(t *testing.T) *Blobs {
	t.Helper()
	b, err := NewBlobs(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyFinal fails unless dir holds exactly the named files (no temporaries).
func onlyFinal(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("%s holds %v, want %v", dir, got, names)
		}
	}
}

func TestBlobsFetch(t *testing.T) {
	server, local := newBlobs(t), newBlobs(t)
	exe := filepath.Join(t.TempDir(), "prog")
	content := randomBytes(5<<20+3, 11)
	if err := os.WriteFile(exe, content, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := server.AddFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if sum != sha256.Sum256(content) {
		t.Fatal("AddFile returned the wrong sum")
	}
	addr := serve(t, server)
	c := newClient(t)
	if local.Has(sum) {
		t.Fatal("Has before the fetch")
	}
	if err := c.Fetch(context.Background(), addr, BlobKey(sum), local); err != nil {
		t.Fatal(err)
	}
	if !local.Has(sum) {
		t.Fatal("not Has after the fetch")
	}
	got, err := os.ReadFile(local.Path(sum))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Fatal("fetched blob differs")
	}
	fi, err := os.Stat(local.Path(sum))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("blob mode %v, want 0700 (executable by its owner only)", fi.Mode().Perm())
	}
	onlyFinal(t, local.Dir(), filepath.Base(local.Path(sum)))

	// A blob nobody has is ErrNotFound.
	err = c.Fetch(context.Background(), addr, BlobKey([32]byte{1}), local)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing blob: %v, want ErrNotFound", err)
	}
}

// lyingSource serves data under whatever key is asked.
type lyingSource []byte

func (s lyingSource) Open(Key) ([]byte, func(), error) { return s, func() {}, nil }

func TestBlobsRejectWrongContent(t *testing.T) {
	local := newBlobs(t)
	addr := serve(t, lyingSource("not what the sum says"))
	sum := sha256.Sum256([]byte("the real executable"))
	err := newClient(t).Fetch(context.Background(), addr, BlobKey(sum), local)
	if err == nil {
		t.Fatal("a blob whose content does not match its sum was accepted")
	}
	if local.Has(sum) {
		t.Fatal("the wrong content was stored under the sum")
	}
	onlyFinal(t, local.Dir()) // no temporary left behind either
}

func TestBlobsEmpty(t *testing.T) {
	server, local := newBlobs(t), newBlobs(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := server.AddFile(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := newClient(t).Fetch(context.Background(), serve(t, server), BlobKey(sum), local); err != nil {
		t.Fatal(err)
	}
	if !local.Has(sum) {
		t.Fatal("empty blob missing after the fetch")
	}
}

func TestBlobsRejectObjectKeys(t *testing.T) {
	b := newBlobs(t)
	if _, _, err := b.Open(ObjectKey(objectID(1))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open(object key): %v, want ErrNotFound", err)
	}
	if _, err := b.Create(ObjectKey(objectID(1)), 1); err == nil {
		t.Fatal("Create accepted an object key")
	}
}

func TestChainServesStoreAndBlobs(t *testing.T) {
	store, blobs := openStore(t, 1<<20), newBlobs(t)
	putBytes(t, store, objectID(1), []byte("object"))
	f := filepath.Join(t.TempDir(), "exe")
	if err := os.WriteFile(f, []byte("blob"), 0o700); err != nil {
		t.Fatal(err)
	}
	sum, err := blobs.AddFile(f)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, Chain(StoreSource(store), blobs))
	c := newClient(t)
	if err := c.Fetch(context.Background(), addr, ObjectKey(objectID(1)), StoreSink(openStore(t, 1<<20))); err != nil {
		t.Fatal(err)
	}
	if err := c.Fetch(context.Background(), addr, BlobKey(sum), newBlobs(t)); err != nil {
		t.Fatal(err)
	}
	err = c.Fetch(context.Background(), addr, ObjectKey(objectID(2)), StoreSink(openStore(t, 1<<20)))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing from both: %v, want ErrNotFound", err)
	}
	if _, _, err := Chain().Open(ObjectKey(objectID(1))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty chain: %v, want ErrNotFound", err)
	}
}
