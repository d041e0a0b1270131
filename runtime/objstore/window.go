package objstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"golang.org/x/sys/unix"
)

// A window is the owner's read-only mapping of one object, laid over a Go
// heap allocation of the same size (see the package doc, "Lifetime of the
// owner's slices"). Go's garbage collector follows pointers into its own
// heap only, interior ones included, so any slice decoded from a window
// keeps the whole allocation, and with it the mapping, alive. The store
// holds the window while the object is in the store; once the object
// leaves it (freed or evicted), the window is draining: its pages are
// neither reused nor counted free until the collector finds that nothing
// points into it. Its finalizer then puts private anonymous memory back
// over the range, so that the Go runtime gets ordinary memory back.
type window struct {
	s    *Store
	size uintptr            // bytes mapped: the object's size rounded up to whole pages
	wp   weak.Pointer[byte] // nil once the collector found the window unreachable
	// drain is set, under the store's lock, when the object leaves the
	// store while its window may still be referenced.
	drain *drain
}

// A drain is the memory of an object that left the store while its window
// may still be referenced: the object's file, renamed so that no one finds
// it by id, and the owner's writable mapping, kept for reuse as a spare once
// the window is gone.
type drain struct {
	win  *window
	size int64
	name string // the renamed file; "" if it could not be renamed (removed)
	wmap []byte
	keep bool   // worth keeping as a spare
	gen  uint64 // s.collects when it started: a later collection found it referenced
}

// minAlloc is the smallest allocation made for a window: the Go heap
// places allocations of up to 32 KiB side by side in shared spans, where no
// mapping can go, and gives larger ones spans of their own, starting on a
// page boundary. A smaller object gets a window of its size in a minAlloc
// allocation (shared objects are normally 100 KiB or more; see
// codec.InlineThreshold), so that it is read-only like any other.
const minAlloc = 40 << 10

var pageSize = uintptr(os.Getpagesize())

// mallocgc is the Go runtime's allocator, which the runtime lets other
// packages call (see the comment on it in runtime/malloc.go). With typ nil
// the allocation holds no pointers, so the collector never reads or writes
// it; with needzero false, a reused span is not cleared first. make([]byte,
// n) would clear it: for a 64 MiB window, 64 MiB of writes that fault every
// page of the range in, only for the mapping to replace them.
//
//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// leaked holds windows whose range could not be given back as ordinary
// memory (an mmap failed): they are kept reachable for the life of the
// process, since the Go heap must never reuse a read-only shared mapping.
var leaked struct {
	sync.Mutex
	bufs []*byte
}

// mapWindow returns the bytes of the sealed object id of size bytes (> 0)
// for the owner's Get: its file mapped read-only over a fresh Go heap
// allocation, whose finalizer gives the range back.
func (s *Store) mapWindow(id ID, size int64) ([]byte, *window, error) {
	fd, err := unix.Open(Path(s.dir, id), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("objstore: mapping object %s: %w", id, err)
	}
	defer unix.Close(fd)
	n := (uintptr(size) + pageSize - 1) &^ (pageSize - 1)
	p := mallocgc(max(n, minAlloc), nil, false)
	if uintptr(p)%pageSize != 0 {
		// Not page-aligned (pages larger than the Go heap's, 8 KiB): no
		// mapping can go there, so copy. Such a copy is writable.
		b := unsafe.Slice((*byte)(p), n)[:size:size]
		for off := 0; off < len(b); {
			k, err := unix.Pread(fd, b[off:], int64(off))
			if err != nil || k == 0 {
				return nil, nil, fmt.Errorf("objstore: reading object %s (%d bytes) at %d: %w", id, size, off, errors.Join(err, io.ErrUnexpectedEOF))
			}
			off += k
		}
		return b, nil, nil
	}
	if err := mmapFixed(p, n, unix.PROT_READ, unix.MAP_SHARED, fd); err != nil {
		// A failed MAP_FIXED may have unmapped the range already.
		giveBack((*byte)(p), n)
		return nil, nil, fmt.Errorf("objstore: mapping object %s (%d bytes): %w", id, size, err)
	}
	base := (*byte)(p)
	w := &window{s: s, size: n, wp: weak.Make(base)}
	// A finalizer, not runtime.AddCleanup: a finalizer keeps the
	// allocation from being freed until it has returned, so no other Go
	// value can be placed in the range while it is still the object's
	// read-only mapping.
	runtime.SetFinalizer(base, w.finalize)
	return unsafe.Slice(base, n)[:size:size], w, nil
}

// finalize runs once nothing points into the window: it puts ordinary
// memory back over the range and ends the drain, if the store has not
// ended it already (reclaimLocked).
func (w *window) finalize(base *byte) {
	giveBack(base, w.size)
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := w.drain; d != nil && !s.closed {
		s.endDrainLocked(d)
	}
}

// giveBack maps private anonymous read-write memory over the n bytes at
// base, which is what the Go heap had there before, or, if that fails,
// keeps base reachable forever.
func giveBack(base *byte, n uintptr) {
	if err := mmapFixed(unsafe.Pointer(base), n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1); err != nil {
		leaked.Lock()
		leaked.bufs = append(leaked.bufs, base)
		leaked.Unlock()
	}
}

// mmapFixed maps n bytes of fd (from offset 0; -1 with MAP_ANONYMOUS) at
// exactly p, replacing what was mapped there. It is the system call itself:
// unix.MmapPtr converts the address it returns back to a pointer, which
// the race detector's pointer checks (checkptr) reject for an address in
// the Go heap, and the address is p anyway.
func mmapFixed(p unsafe.Pointer, n uintptr, prot, flags, fd int) error {
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(p), n, uintptr(prot), uintptr(flags|unix.MAP_FIXED), uintptr(fd), 0)
	// The allocation must not be freed, and reused, while the kernel
	// replaces its mapping.
	runtime.KeepAlive(p)
	if errno != 0 {
		return errno
	}
	if r != uintptr(p) {
		return fmt.Errorf("mmap placed the mapping at %#x, not %p", r, p)
	}
	return nil
}

// startDrainLocked records that the object of entry e, whose window is w,
// left the store: its file is renamed out of the way of a new object of
// the same id (a rebuild) and of readers that look it up by id, and its
// pages stay accounted (s.drained) until the window is unreachable.
func (s *Store) startDrainLocked(e *entry, w *window, wmap []byte) {
	d := &drain{win: w, size: e.size, wmap: wmap, keep: wmap != nil || e.recv, gen: s.collects}
	s.spareSeq++
	name := s.spareName(".drain-")
	if err := os.Rename(Path(s.dir, e.id), name); err == nil {
		d.name = name
	} else {
		// The window and the writable mapping keep the pages until they
		// are unmapped; the file is of no further use.
		_ = os.Remove(Path(s.dir, e.id))
		d.keep = false
	}
	w.drain = d
	s.drains = append(s.drains, d)
	s.drained += d.size
}

// endDrainLocked frees a drain's pages: kept as a spare when worthwhile,
// else removed.
func (s *Store) endDrainLocked(d *drain) {
	i := -1
	for j, x := range s.drains {
		if x == d {
			i = j
			break
		}
	}
	if i < 0 {
		return // ended already
	}
	s.drains = append(s.drains[:i], s.drains[i+1:]...)
	s.drained -= d.size
	d.win.drain = nil
	if d.name == "" {
		unmap(d.wmap)
		return
	}
	s.retireFileLocked(d.name, d.size, d.wmap, d.keep)
}

// reclaimLocked ends the drains whose windows the collector has found
// unreachable: nothing can read them any more, so their pages may be reused
// at once, before the finalizers (which only give the ranges back to the Go
// heap) have run. The runtime clears an object's weak pointers when it
// finds it unreachable, before it queues (and resurrects the object for)
// its finalizer, as the weak package specifies (runtime/mgcsweep.go).
func (s *Store) reclaimLocked() {
	var done []*drain
	for _, d := range s.drains {
		if d.win.wp.Value() == nil {
			done = append(done, d)
		}
	}
	for _, d := range done {
		s.endDrainLocked(d)
	}
}

// collect runs a garbage collection so that windows that nothing points
// into any more are found, and ends their drains. The store's lock must
// not be held: finalizers take it.
func (s *Store) collect() {
	runtime.GC()
	s.mu.Lock()
	s.collects++
	s.reclaimLocked()
	s.mu.Unlock()
}

// errCollect says that a collection could spare reserve an ErrFull, an
// eviction or fresh pages; reserve collects once and tries again.
var errCollect = errors.New("objstore: a collection may free drained pages")

// shouldCollectLocked reports whether a garbage collection could end drains
// that make a reservation of size bytes fail (ErrFull) or take fresh pages
// where a drain's could be reused. For the latter (and for evictions, see
// tryReserve) it counts only new drains, started since the last collection
// the store ran: one that survived it is referenced, or was then, and its
// finalizer ends it when it no longer is; collecting again for it at every
// reservation would cost a collection per object put.
func (s *Store) shouldCollectLocked(size int64, inline bool) bool {
	if s.drained == 0 || s.pinned+size > s.capacity {
		return false
	}
	if s.pinned+s.drained+size > s.capacity {
		return true
	}
	if inline || size < recycleMin {
		return false
	}
	fits := func(n int64) bool { return n >= size && n <= size+size/4 } // as takeSpareLocked
	for _, sp := range s.spares {
		if fits(sp.size) {
			return false
		}
	}
	for _, d := range s.drains {
		if d.gen == s.collects && d.keep && fits(d.size) {
			return true
		}
	}
	return false
}

// newDrainsLocked reports whether a drain started since the last
// collection the store ran.
func (s *Store) newDrainsLocked() bool {
	for _, d := range s.drains {
		if d.gen == s.collects {
			return true
		}
	}
	return false
}
