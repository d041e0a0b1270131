package objstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newStore(t testing.TB, capacity int64, onEvict func(ID, int64)) *Store {
	t.Helper()
	s, err := Open(Options{Session: fmt.Sprintf("test-%d-%x", os.Getpid(), randUint64()), Capacity: capacity, OnEvict: onEvict})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func put(t testing.TB, s *Store, id ID, size int, fill byte) {
	t.Helper()
	w, err := s.Create(id, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Bytes() {
		w.Bytes()[i] = fill
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateSealGetMap(t *testing.T) {
	s := newStore(t, 1<<20, nil)
	put(t, s, "a1", 10000, 7)
	if _, err := os.Stat(Path(s.Dir(), "a1")); err != nil {
		t.Fatalf("sealed object has no file: %v", err)
	}
	b, err := s.Get("a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 10000 || b[9999] != 7 {
		t.Fatalf("Get returned %d bytes, last %d", len(b), b[len(b)-1])
	}
	if err := s.Unpin("a1"); err != nil {
		t.Fatal(err)
	}
	m, err := Map(s.Dir(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Bytes()) != 10000 || m.Bytes()[0] != 7 {
		t.Fatal("Map saw different bytes")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Zero-size objects work too.
	put(t, s, "empty", 0, 0)
	if b, err := s.Get("empty"); err != nil || len(b) != 0 {
		t.Fatalf("empty object: %v %d", err, len(b))
	}
}

func TestUnsealedAndMissing(t *testing.T) {
	s := newStore(t, 1<<20, nil)
	w, err := s.Create("x", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("Get of unsealed: %v", err)
	}
	if _, err := Map(s.Dir(), "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Map of unsealed: %v", err)
	}
	if _, err := s.Create("x", 10); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Abort: %v", err)
	}
	if st := s.Stats(); st.Used != 0 || st.PinnedBytes != 0 {
		t.Fatalf("Abort left %+v", st)
	}
	if _, err := s.Create("../etc", 1); !errors.Is(err, ErrBadID) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestEvictionLRU(t *testing.T) {
	var evicted []ID
	s := newStore(t, 3000, func(id ID, size int64) { evicted = append(evicted, id) })
	put(t, s, "a", 1000, 1)
	put(t, s, "b", 1000, 2)
	put(t, s, "c", 1000, 3)
	// Touch a: b is now least recently used.
	if _, err := s.Get("a"); err != nil {
		t.Fatal(err)
	}
	_ = s.Unpin("a")
	put(t, s, "d", 1000, 4)
	put(t, s, "e", 1000, 5)
	if got := fmt.Sprint(evicted); got != "[b c]" {
		t.Fatalf("evicted %s, want [b c] (LRU order)", got)
	}
	_, err := s.Get("b")
	if !errors.Is(err, ErrEvicted) {
		t.Fatalf("Get of evicted object: %v, want ErrEvicted", err)
	}
	if _, err := os.Stat(Path(s.Dir(), "b")); !os.IsNotExist(err) {
		t.Fatal("evicted object's file still exists")
	}
	// A lineage rebuild creates it again under the same id.
	put(t, s, "b", 1000, 2)
	if b, err := s.Get("b"); err != nil || b[0] != 2 {
		t.Fatalf("rebuilt object: %v", err)
	}
	if st := s.Stats(); st.Used > st.Capacity || st.Evictions != 3 {
		t.Fatalf("stats after eviction: %+v", st)
	}
}

func TestPinPreventsEviction(t *testing.T) {
	s := newStore(t, 2000, nil)
	put(t, s, "a", 1000, 1)
	put(t, s, "b", 1000, 2)
	if err := s.Pin("a"); err != nil { // a is the LRU one, but pinned
		t.Fatal(err)
	}
	put(t, s, "c", 1000, 3)
	if !s.Contains("a") || s.Contains("b") {
		t.Fatalf("pinned a must survive and b be evicted: a=%v b=%v", s.Contains("a"), s.Contains("b"))
	}
	if err := s.Pin("c"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Create("d", 1000)
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("Create with everything pinned: %v, want ErrFull naming pinned bytes", err)
	}
	_ = s.Unpin("a")
	put(t, s, "d", 1000, 4)
	if s.Contains("a") || !s.Contains("c") {
		t.Fatal("after Unpin, a must be evictable and c still pinned")
	}
}

func TestTooLarge(t *testing.T) {
	s := newStore(t, 4096, nil)
	_, err := s.Create("big", 5000)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{"big", "4.88 KiB (5000 bytes)", "4.00 KiB (4096 bytes)", "capacity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := s.PutInline("big2", make([]byte, 5000)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("PutInline: %v", err)
	}
}

func TestRefcountRelease(t *testing.T) {
	s := newStore(t, 1<<20, nil)
	put(t, s, "r", 4096, 9)
	if err := s.AddRef("r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("r"); err != nil { // pinned by a reader
		t.Fatal(err)
	}
	_ = s.Release("r")
	_ = s.Release("r")
	if _, err := os.Stat(Path(s.Dir(), "r")); err != nil {
		t.Fatal("a pinned object was freed by Release")
	}
	_ = s.Unpin("r")
	if _, err := os.Stat(Path(s.Dir(), "r")); !os.IsNotExist(err) {
		t.Fatal("object with no references and no pins still has a file")
	}
	if _, err := s.Get("r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after free: %v", err)
	}
	if st := s.Stats(); st.Used != 0 || st.Objects != 0 || st.PinnedBytes != 0 {
		t.Fatalf("stats after free: %+v", st)
	}
	if err := s.Release("r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("double release: %v", err)
	}
	// Inline objects follow the same rules.
	if err := s.PutInline("small", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get("small"); err != nil || string(b) != "hello" {
		t.Fatalf("inline Get: %q %v", b, err)
	}
	_ = s.Unpin("small")
	_ = s.Release("small")
	if st := s.Stats(); st.Used != 0 {
		t.Fatalf("inline release left %d bytes", st.Used)
	}
}

func TestWorkerWriteAndAdopt(t *testing.T) {
	s := newStore(t, 10000, nil)
	put(t, s, "old", 8000, 1)
	w, err := CreateFile(s.Dir(), "fromworker", 5000)
	if err != nil {
		t.Fatal(err)
	}
	copy(w.Bytes(), "payload")
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Adopt("fromworker"); err != nil {
		t.Fatal(err)
	}
	if s.Contains("old") {
		t.Fatal("Adopt did not evict to make room")
	}
	b, err := s.Get("fromworker")
	if err != nil || string(b[:7]) != "payload" {
		t.Fatalf("adopted object: %v", err)
	}
	_ = s.Unpin("fromworker")
	// An adopted object that cannot fit is removed with a clear error.
	w, _ = CreateFile(s.Dir(), "huge", 20000)
	_ = w.Seal()
	if err := s.Adopt("huge"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Adopt of oversize object: %v", err)
	}
	if _, err := os.Stat(Path(s.Dir(), "huge")); !os.IsNotExist(err) {
		t.Fatal("rejected object's file remains")
	}
}

func TestGuardReadOnlyWrite(t *testing.T) {
	s := newStore(t, 1<<20, nil)
	put(t, s, "ro", 8192, 1)
	b, err := s.Get("ro")
	if err != nil {
		t.Fatal(err)
	}
	err = Guard(func() error {
		b[100] = 2 // faults: the mapping is PROT_READ
		return nil
	})
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "copy before writing") {
		t.Fatalf("write to a sealed object: %v, want ErrReadOnly", err)
	}
	if b[100] != 1 {
		t.Fatal("the store was modified")
	}
	// Ordinary errors and non-fault panics pass through.
	if err := Guard(func() error { return os.ErrClosed }); err != os.ErrClosed {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = Guard(func() error { panic("boom") })
	}()
}

func TestCloseRemovesDirAndCleanStale(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Options{Dir: filepath.Join(root, "gray-live"), Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "x", 100, 1)
	// A directory left by a dead driver: an owner file naming a process
	// that does not exist (pid 0 start time "1" never matches).
	dead := filepath.Join(root, "gray-dead")
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dead, ownerFile), []byte("999999999 1\n"), 0o600)
	_ = os.WriteFile(filepath.Join(dead, "obj"), []byte("x"), 0o600)
	removed, err := CleanStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead {
		t.Fatalf("CleanStale removed %v, want only %s", removed, dead)
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Fatal("CleanStale removed a live store")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Fatal("Close left the directory")
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

func TestDefaultCapacity(t *testing.T) {
	c, err := DefaultCapacity("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	avail, _ := memAvailable()
	if c <= 0 || c > avail {
		t.Fatalf("default capacity %d with %d available", c, avail)
	}
}

func TestRecyclePages(t *testing.T) {
	s := newStore(t, 16<<20, nil)
	put(t, s, "a", 1<<20, 1)
	_ = s.Release("a")
	if st := s.Stats(); st.SpareBytes != 1<<20 || st.Used != 0 {
		t.Fatalf("after freeing a 1 MiB object: %+v, want its pages kept as spare", st)
	}
	put(t, s, "b", 1<<20-100, 2)
	if st := s.Stats(); st.SpareBytes != 0 || st.Used != 1<<20-100 {
		t.Fatalf("after a put of about the same size: %+v, want the spare reused", st)
	}
	b, err := s.Get("b")
	if err != nil || len(b) != 1<<20-100 || b[0] != 2 || b[len(b)-1] != 2 {
		t.Fatalf("object on recycled pages: %v", err)
	}
	_ = s.Unpin("b")
	// Spares are dropped, not live objects evicted, when room is needed.
	_ = s.Release("b")
	put(t, s, "c", 15<<20+512<<10, 3)
	if st := s.Stats(); st.SpareBytes != 0 || st.Evictions != 0 {
		t.Fatalf("big put: %+v", st)
	}
}

func TestReaderCachesAndRevalidates(t *testing.T) {
	s := newStore(t, 64<<20, nil)
	put(t, s, "a", 1<<20, 1)
	r := NewReader(s.Dir(), 1)
	defer r.Close()
	v1, err := r.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if &v1.Bytes()[0] != &v2.Bytes()[0] || v1.Bytes()[0] != 1 {
		t.Fatal("a second Get of the same object must reuse the mapping")
	}
	v1.Done()
	v2.Done()
	// The object is freed, its pages recycled by b, then a is made again
	// (a lineage rebuild) with other contents: the cached mapping must not
	// be served.
	_ = s.Release("a")
	if _, err := r.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a freed object: %v", err)
	}
	put(t, s, "b", 1<<20, 2)
	put(t, s, "a", 1<<20, 3)
	v3, err := r.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if v3.Bytes()[0] != 3 {
		t.Fatalf("Reader served a stale mapping: byte %d, want 3", v3.Bytes()[0])
	}
	// Over the idle limit (1), the least recently used mapping goes.
	vb, _ := r.Get("b")
	vb.Done()
	v3.Done()
	r.mu.Lock()
	n := len(r.maps)
	r.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d idle mappings cached, limit 1", n)
	}
	if _, err := r.Get("../x"); !errors.Is(err, ErrBadID) {
		t.Fatal(err)
	}
}

func TestReserveForAnotherWriter(t *testing.T) {
	s := newStore(t, 64<<20, nil)
	put(t, s, "old", 1<<20, 1)
	_ = s.Release("old") // its pages become a spare
	if err := s.Reserve("res", 1<<20); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.SpareBytes != 0 {
		t.Fatalf("Reserve did not reuse the spare: %+v", st)
	}
	// What a worker does:
	w, err := OpenReserved(s.Dir(), "res")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Bytes()) != 1<<20 {
		t.Fatalf("reserved buffer of %d bytes", len(w.Bytes()))
	}
	for i := range w.Bytes() {
		w.Bytes()[i] = 5
	}
	if err := w.Seal(); err == nil {
		t.Fatal("a worker must not seal a reserved object itself")
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	// Then the owner, on the worker's reply:
	if err := s.Seal("res"); err != nil {
		t.Fatal(err)
	}
	b, err := s.Get("res")
	if err != nil || b[0] != 5 || b[len(b)-1] != 5 {
		t.Fatalf("reserved object after seal: %v", err)
	}
	_ = s.Unpin("res")
	// A failed writer: the owner aborts and the room comes back.
	if err := s.Reserve("res2", 1000); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort("res2"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReserved(s.Dir(), "res2"); err == nil {
		t.Fatal("OpenReserved of an aborted object must fail")
	}
	if st := s.Stats(); st.Used != 1<<20 || st.PinnedBytes != 0 {
		t.Fatalf("after abort: %+v", st)
	}
}

func TestFailedRebuildKeepsReferences(t *testing.T) {
	s := newStore(t, 2000, nil)
	put(t, s, "a", 1000, 1)
	put(t, s, "b", 1000, 2)
	put(t, s, "c", 1000, 3) // evicts a
	if _, err := s.Get("a"); !errors.Is(err, ErrEvicted) {
		t.Fatal(err)
	}
	w, err := s.Create("a", 1000) // rebuild starts, then its task fails
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("a"); !errors.Is(err, ErrEvicted) {
		t.Fatalf("after a failed rebuild: %v, want still ErrEvicted", err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatalf("the runtime's reference was lost: %v", err)
	}
	if _, err := s.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}
