package objstore

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// pattern returns n bytes that differ from one offset to the next.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i>>9) ^ seed
	}
	return b
}

// writeInPieces writes data with WriteAt from several goroutines, each a
// disjoint range, as a transfer's parallel streams do.
func writeInPieces(t *testing.T, w interface {
	WriteAt([]byte, int64) (int, error)
}, data []byte) {
	t.Helper()
	const parts = 4
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for i := range parts {
		lo, hi := len(data)*i/parts, len(data)*(i+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := lo; off < hi; off += 4096 {
				if _, err := w.WriteAt(data[off:min(off+4096, hi)], int64(off)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// An object made by CreateUnmapped has no mapping and is filled through
// its file, in fresh pages or in a freed received object's pages (kept as
// a spare); a freed object made by Create leaves its pages mapped, and
// CreateUnmapped then gives that mapping. Every object reads back whole.
func TestCreateUnmappedFreshThenReused(t *testing.T) {
	const size = 1<<20 + 4096
	s := newStore(t, 16<<20, nil)
	for i, step := range []struct {
		id     ID
		mapped bool // made by Create
		want   bool // Bytes non-nil
	}{
		{"u1", false, false}, // fresh pages
		{"u2", false, false}, // u1's pages, unmapped
		{"m1", true, true},   // u2's pages, mapped now
		{"u3", false, true},  // m1's pages, still mapped
	} {
		create := s.CreateUnmapped
		if step.mapped {
			create = s.Create
		}
		w, err := create(step.id, size)
		if err != nil {
			t.Fatal(err)
		}
		if (w.Bytes() != nil) != step.want {
			t.Fatalf("%s: Bytes() non-nil = %v, want %v", step.id, w.Bytes() != nil, step.want)
		}
		data := pattern(size, byte(i))
		writeInPieces(t, w, data)
		if _, err := w.WriteAt([]byte{1, 2}, size-1); err == nil {
			t.Fatal("WriteAt past the end: no error")
		}
		if err := w.Seal(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt([]byte{1}, 0); err == nil {
			t.Fatal("WriteAt after Seal: no error")
		}
		got, err := s.Get(step.id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: the bytes read back differ from those written", step.id)
		}
		if err := s.Unpin(step.id); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(step.id); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FreshBytes != size || st.ReusedBytes != 3*size {
		t.Fatalf("fresh %d, reused %d bytes; want %d fresh, %d reused", st.FreshBytes, st.ReusedBytes, size, 3*size)
	}
}

// Abort of an unmapped object being written leaves no file and no
// accounting; the id can be created again.
func TestCreateUnmappedAbort(t *testing.T) {
	s := newStore(t, 16<<20, nil)
	w, err := s.CreateUnmapped("ab", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(pattern(4096, 1), 8192); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte{1}, 0); err == nil {
		t.Fatal("WriteAt after Abort: no error")
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir(), "ab*")); len(left) > 0 {
		t.Fatalf("Abort left %v", left)
	}
	if st := s.Stats(); st.Used != 0 || st.PinnedBytes != 0 || s.Contains("ab") {
		t.Fatalf("after Abort: %+v", st)
	}
	if _, err := s.CreateUnmapped("ab", 10); err != nil {
		t.Fatalf("creating the id again: %v", err)
	}
}

// CreateFileUnmapped (a worker filling its node's store) writes through
// the file; Seal publishes it, Abort leaves nothing.
func TestCreateFileUnmapped(t *testing.T) {
	dir := t.TempDir()
	data := pattern(3<<20+17, 5)
	w, err := CreateFileUnmapped(dir, "f1", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if w.Bytes() != nil {
		t.Fatal("an unmapped file writer has a mapping")
	}
	writeInPieces(t, w, data)
	if _, err := os.Stat(Path(dir, "f1")); err == nil {
		t.Fatal("the object is visible before Seal")
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	m, err := Map(dir, "f1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !bytes.Equal(m.Bytes(), data) {
		t.Fatal("the mapped object differs from what was written")
	}

	w, err = CreateFileUnmapped(dir, "f2", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(pattern(100, 1), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "f2*")); len(left) > 0 {
		t.Fatalf("Abort left %v", left)
	}
}
