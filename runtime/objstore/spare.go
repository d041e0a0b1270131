package objstore

import (
	"os"
	"path/filepath"
	"strconv"
)

// A spare is the file of a freed object, kept (renamed) so that its
// already-allocated shared-memory pages can be reused by the next Create of
// about its size. Allocating fresh tmpfs pages costs far more than copying
// into them (see benchmarks/results/runtime.md, "Object store"), so recycling is what lets a put of a
// large array run near memcpy speed. Spares count against the capacity and
// are the first thing dropped when room is needed.
type spare struct {
	name string
	size int64
	wmap []byte // kept mapped, page tables populated: reuse costs no mmap (nil: not mapped)
}

const (
	recycleMin = 64 << 10 // smaller objects are cheap to allocate afresh
	maxSpares  = 8
)

// retireFileLocked disposes of the file name of a freed object of size
// bytes, with wmap the owner's writable mapping of it (or nil): it becomes a
// spare if keep says its pages are worth reusing and the spares have room,
// else it is removed.
func (s *Store) retireFileLocked(name string, size int64, wmap []byte, keep bool) {
	if keep && size >= recycleMin && size <= s.capacity/4 && s.spareUsed+size <= s.capacity/4 {
		if len(s.spares) == maxSpares {
			s.dropSpareLocked(0)
		}
		s.spareSeq++
		sname := s.spareName(".spare-")
		if os.Rename(name, sname) == nil {
			s.spares = append(s.spares, &spare{name: sname, size: size, wmap: wmap})
			s.spareUsed += size
			return
		}
	}
	unmap(wmap)
	_ = os.Remove(name)
}

// spareName names a file of freed pages: prefix and the latest spareSeq.
func (s *Store) spareName(prefix string) string {
	return filepath.Join(s.dir, prefix+strconv.FormatUint(s.spareSeq, 10))
}

// takeSpareLocked removes and returns the smallest spare file that holds
// size bytes without wasting more than a quarter, or nil. Among those,
// a spare that is still mapped comes first: one without a mapping (a
// received object's) must be mapped, a page-table entry per 4 KiB, before
// it is filled.
func (s *Store) takeSpareLocked(size int64) *spare {
	best := -1
	better := func(a, b *spare) bool {
		if (a.wmap != nil) != (b.wmap != nil) {
			return a.wmap != nil
		}
		return a.size < b.size
	}
	for i, sp := range s.spares {
		if sp.size >= size && sp.size <= size+size/4 && (best < 0 || better(sp, s.spares[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	sp := s.spares[best]
	s.spares = append(s.spares[:best], s.spares[best+1:]...)
	s.spareUsed -= sp.size
	return sp
}

func (s *Store) dropSpareLocked(i int) {
	sp := s.spares[i]
	s.spares = append(s.spares[:i], s.spares[i+1:]...)
	s.spareUsed -= sp.size
	unmap(sp.wmap)
	_ = os.Remove(sp.name)
}
