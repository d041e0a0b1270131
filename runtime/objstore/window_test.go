package objstore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// getCopy returns a copy of object id's bytes, through a Get whose slice
// is dropped when it returns.
func getCopy(t *testing.T, s *Store, id ID) []byte {
	t.Helper()
	b, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unpin(id); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// allEqual reports whether every byte of b is c.
func allEqual(b []byte, c byte) bool {
	return len(bytes.TrimLeft(b, string([]byte{c}))) == 0
}

// The owner's slice of an object outlives the object: released and
// collected, its pages are neither reused nor counted free while the slice
// is referenced, and are once it is not.
func TestWindowOutlivesRelease(t *testing.T) {
	const size = 1 << 20
	s := newStore(t, 64<<20, nil)
	put(t, s, "x", size, 7)
	b, err := s.Get("x")
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Unpin("x")
	if err := s.Release("x"); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	st := s.Stats()
	if st.DrainingBytes != size || st.SpareBytes != 0 || st.Used != 0 {
		t.Fatalf("released while its slice is referenced: %+v, want %d bytes draining, none spare or used", st, size)
	}
	if _, err := Map(s.Dir(), "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a released object can still be mapped by id: %v", err)
	}
	// New objects of the same size (which would reuse freed pages) and a
	// rebuild under the same id leave the slice as it was.
	put(t, s, "y", size, 9)
	put(t, s, "x", size, 8)
	runtime.GC()
	if !allEqual(b, 7) {
		t.Fatal("the slice of a released object changed when new objects were put")
	}
	if st := s.Stats(); st.ReusedBytes != 0 || st.DrainingBytes != size {
		t.Fatalf("after two more puts: %+v, want no reused bytes and %d draining", st, size)
	}
	if got := getCopy(t, s, "x"); !allEqual(got, 8) {
		t.Fatal("the rebuilt object reads back wrong")
	}
	runtime.KeepAlive(b)

	// Unreferenced and collected, the pages are a spare and get reused.
	b = nil
	runtime.GC()
	if st := s.Stats(); st.DrainingBytes != 0 || st.SpareBytes != size {
		t.Fatalf("after the slice was collected: %+v, want nothing draining and %d spare bytes", st, size)
	}
	put(t, s, "z", size, 5)
	if st := s.Stats(); st.ReusedBytes != size {
		t.Fatalf("the drained pages were not reused: %+v", st)
	}
	if got := getCopy(t, s, "z"); !allEqual(got, 5) {
		t.Fatal("object z reads back wrong")
	}
}

// A Get's slice of an object that is then evicted stays valid, and the
// rebuilt object under the same id is independent of it.
func TestWindowOutlivesEviction(t *testing.T) {
	const size = 256 << 10
	s := newStore(t, 3*size, nil)
	put(t, s, "a", size, 1)
	a, err := s.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Unpin("a")
	put(t, s, "b", size, 2)
	put(t, s, "c", size, 3)
	if st := s.Stats(); st.Evictions != 0 {
		t.Fatalf("evictions before the store is full: %+v", st)
	}
	// The store is full: d evicts a (least recently used), whose pages
	// drain while its slice is referenced; the collection the store runs
	// before evicting more cannot free them, so b goes too.
	put(t, s, "d", size, 4)
	if _, err := s.Get("a"); !errors.Is(err, ErrEvicted) {
		t.Fatalf("Get of the evicted object: %v", err)
	}
	if st := s.Stats(); st.DrainingBytes != size || st.Evictions != 2 || st.Used+st.DrainingBytes > st.Capacity {
		t.Fatalf("after evicting a: %+v, want a draining and 2 evictions", st)
	}
	put(t, s, "a", size, 9) // the rebuild
	if !allEqual(a, 1) {
		t.Fatal("the slice of an evicted object changed")
	}
	runtime.KeepAlive(a)
}

// When drains hold the room a Create needs, it collects once before
// failing: a dropped slice frees the room, a referenced one does not.
func TestDrainFullCollectsOnce(t *testing.T) {
	const size = 3 << 20
	s := newStore(t, 4<<20, nil)
	put(t, s, "a", size, 1)
	a, err := s.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Unpin("a")
	_ = s.Release("a")
	_, err = s.Create("b", size)
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "slices the program still holds") {
		t.Fatalf("Create while a referenced slice holds the room: %v, want ErrFull naming the held slices", err)
	}
	if !allEqual(a, 1) {
		t.Fatal("the held slice changed")
	}
	runtime.KeepAlive(a)
	a = nil
	// No collection has run since the slice was dropped: Create runs one.
	w, err := s.Create("b", size)
	if err != nil {
		t.Fatalf("Create once the slice was dropped: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.DrainingBytes != 0 || st.Used != 0 {
		t.Fatalf("after the collection: %+v", st)
	}
}

// A put–get–free loop reuses the pages of each freed object for the next,
// although each was read through a window: the store collects to find the
// window unreferenced rather than fill fresh pages.
func TestPutGetFreeLoopReusesPages(t *testing.T) {
	const size = 1 << 20
	s := newStore(t, 64<<20, nil)
	for i := range 20 {
		id := ID("o" + string(rune('a'+i)))
		put(t, s, id, size, byte(i))
		if got := getCopy(t, s, id); !allEqual(got, byte(i)) {
			t.Fatalf("object %d reads back wrong", i)
		}
		if err := s.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FreshBytes != size || st.ReusedBytes != 19*size {
		t.Fatalf("%+v: want only the first object in fresh pages", st)
	}
}

// Close with slices still referenced, of live and of drained objects:
// they stay readable, and once collected their ranges return to the Go
// heap as ordinary writable memory.
func TestCloseWithLiveWindows(t *testing.T) {
	s, err := Open(Options{Session: "test-close-windows-" + randName(), Capacity: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "live", 1<<20, 3)
	put(t, s, "gone", 1<<20, 4)
	live, _ := s.Get("live")
	gone, _ := s.Get("gone")
	_ = s.Unpin("gone")
	_ = s.Release("gone")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if !allEqual(live, 3) || !allEqual(gone, 4) {
		t.Fatal("slices changed when the store was closed")
	}
	runtime.KeepAlive(live)
	runtime.KeepAlive(gone)
	live, gone = nil, nil
	runtime.GC()
	runtime.GC()
	writeHeap(t)
}

// writeHeap allocates and writes many buffers of the sizes windows had, so
// that the Go heap reuses freed windows' ranges: if one were still a
// read-only mapping the write would fault.
func writeHeap(t *testing.T) {
	t.Helper()
	for range 3 {
		var keep [][]byte
		for _, n := range []int{1 << 20, 256 << 10, 40 << 10, 2 << 20} {
			for range 8 {
				b := make([]byte, n)
				for i := range b {
					b[i] = 0xAB
				}
				keep = append(keep, b)
			}
		}
		runtime.KeepAlive(keep)
		runtime.GC()
	}
}

// Many windows made, dropped and collected: the Go heap reuses their
// ranges, and the process's memory mappings do not pile up.
func TestWindowsReturnToHeap(t *testing.T) {
	s := newStore(t, 64<<20, nil)
	maps0 := countMaps(t)
	for i := range 60 {
		id := ID("w" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		size := []int{1 << 20, 100 << 10, 5000, 3 << 20}[i%4]
		put(t, s, id, size, byte(i))
		if got := getCopy(t, s, id); !allEqual(got, byte(i)) {
			t.Fatalf("object %d reads back wrong", i)
		}
		_ = s.Release(id)
		if i%10 == 9 {
			runtime.GC()
			writeHeap(t)
		}
	}
	runtime.GC()
	runtime.GC()
	writeHeap(t)
	if n := countMaps(t); n > maps0+40 {
		t.Fatalf("memory mappings grew from %d to %d over 60 windows", maps0, n)
	}
}

func countMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps:", err)
	}
	return bytes.Count(b, []byte("\n"))
}

func randName() string { return strconv.FormatUint(randUint64(), 36) }

// A write through the owner's slice, without Guard, stops the process with
// the Go runtime's "unexpected fault address", as documented (shown in a
// child process).
func TestOwnerWriteFaults(t *testing.T) {
	if os.Getenv("GRAY_OBJSTORE_OWNER_WRITE_CHILD") == "1" {
		s, err := Open(Options{Session: "test-owner-write-" + randName(), Capacity: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "a", 1<<20, 1)
		b, _ := s.Get("a")
		_ = s.Close() // the directory goes; the slice stays readable and read-only
		b[12345] = 2
		os.Stdout.WriteString("CHILD-WROTE\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerWriteFaults$")
	cmd.Env = append(os.Environ(), "GRAY_OBJSTORE_OWNER_WRITE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "CHILD-WROTE") || !strings.Contains(string(out), "unexpected fault address") {
		t.Fatalf("unguarded write in a child: err %v, output:\n%s", err, out)
	}
}

// Evicting objects that were read (they have windows) but whose slices are
// gone: the store collects to free their room, and evicts no more than it
// needs (as a node serving its objects to others does).
func TestEvictReadObjectsCollects(t *testing.T) {
	const size = 256 << 10
	s := newStore(t, 3*size, nil)
	for _, id := range []ID{"a", "b", "c"} {
		put(t, s, id, size, 1)
		_ = getCopy(t, s, id)
	}
	put(t, s, "d", size, 4)
	if st := s.Stats(); st.Evictions != 1 || st.DrainingBytes != 0 || st.Used != 3*size {
		t.Fatalf("after putting d into a full store of read objects: %+v, want one eviction and nothing draining", st)
	}
	if got := getCopy(t, s, "d"); !allEqual(got, 4) {
		t.Fatal("d reads back wrong")
	}
}
