package objstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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

// An object made by CreateUnmapped in fresh pages has no mapping and is
// filled through its file; freed, its pages are kept; the next object of
// its size reuses them, mapped (and the one after that, the same mapping).
func TestCreateUnmappedFreshThenReused(t *testing.T) {
	const size = 1<<20 + 4096
	s := newStore(t, 16<<20, nil)
	for i, id := range []ID{"u1", "u2", "u3"} {
		w, err := s.CreateUnmapped(id, size)
		if err != nil {
			t.Fatal(err)
		}
		if fresh := i == 0; fresh != (w.Bytes() == nil) {
			t.Fatalf("object %d: Bytes() nil = %v, want %v (fresh pages are not mapped; reused ones are)", i, w.Bytes() == nil, fresh)
		}
		data := pattern(size, byte(i))
		writeInPieces(t, w, data)
		if _, err := w.WriteAt([]byte{1, 2}, size-1); err == nil {
			t.Fatal("WriteAt past the end: no error")
		}
		if err := w.Seal(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("object %d: the bytes read back differ from those written", i)
		}
		if err := s.Unpin(id); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FreshBytes != size || st.ReusedBytes != 2*size {
		t.Fatalf("fresh %d, reused %d bytes; want %d fresh, %d reused", st.FreshBytes, st.ReusedBytes, size, 2*size)
	}
	// A mapped Create reuses a spare too, and gets a writable mapping.
	put(t, s, "m1", size, 9)
	if got, _ := s.Get("m1"); len(got) != size || got[size-1] != 9 {
		t.Fatal("a Create that reused the pages of an unmapped object read back wrong")
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

// Of two spares that fit, a reuse takes the one still mapped: the other
// (a received object's pages) would have to be mapped first.
func TestReuseTakesMappedSpareFirst(t *testing.T) {
	const size = 1 << 20
	s := newStore(t, 16<<20, nil)
	w, err := s.CreateUnmapped("recv", size) // freed: a spare without a mapping
	if err != nil {
		t.Fatal(err)
	}
	writeInPieces(t, w, pattern(size, 1))
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	put(t, s, "made", size, 2) // fresh pages, mapped; freed: a mapped spare
	for _, id := range []ID{"recv", "made"} {
		if err := s.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	w, err = s.CreateUnmapped("next", size)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if w.Bytes() == nil {
		t.Fatal("the reuse took the unmapped spare while a mapped one fitted")
	}
}

// WaitSealed waits for another writer of the object in the directory: true
// once it seals, false when it aborts, when no one writes it, or when ctx
// ends first.
func TestWaitSealed(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if WaitSealed(ctx, dir, "none") {
		t.Fatal("WaitSealed of an object no one writes: true")
	}
	for _, seal := range []bool{true, false} {
		w, err := CreateFileUnmapped(dir, ID(fmt.Sprintf("w%v", seal)), 4096)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan bool)
		waiting := &doneAsked{Context: ctx, asked: make(chan struct{})}
		go func() { done <- WaitSealed(waiting, dir, ID(fmt.Sprintf("w%v", seal))) }()
		<-waiting.asked // it found the writer busy and waits
		if seal {
			err = w.Seal()
		} else {
			err = w.Abort()
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := <-done; got != seal {
			t.Fatalf("WaitSealed after the writer's %s: %v", map[bool]string{true: "Seal", false: "Abort"}[seal], got)
		}
	}
	w, err := CreateFileUnmapped(dir, "stuck", 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if WaitSealed(cctx, dir, "stuck") {
		t.Fatal("WaitSealed of a writer that never finishes: true")
	}
}

// doneAsked is a context that closes asked the first time its Done is
// called: a waiter asks for it when it is about to wait.
type doneAsked struct {
	context.Context
	asked chan struct{}
	once  sync.Once
}

func (c *doneAsked) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}
