package objstore

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Reader maps objects for a process that does not own the store (a worker)
// and keeps the mappings for reuse: a worker that reads the same object in
// many tasks (policy weights, an ES noise table) maps it once. Mapping costs
// several system calls; a cached get costs one stat.
//
// Each Get returns a View whose Done ends that use; a mapping is unmapped
// only when none of its views is outstanding. Because the
// owner reuses the pages of freed objects, Get checks that the cached
// mapping still belongs to the object (same file, not renamed since) and
// remaps otherwise. The owner must still keep the object pinned while a Get
// is outstanding. A Reader is safe for concurrent use.
type Reader struct {
	dir string
	max int

	mu     sync.Mutex
	closed bool
	maps   map[ID]*cachedMap // current mapping of each id
	clock  uint64
}

type cachedMap struct {
	m     *Mapping
	ino   uint64
	ctime unix.Timespec
	users int
	used  uint64 // r.clock at the last Get
	stale bool   // no longer cached: unmap when users reach 0
}

// NewReader returns a Reader for the store directory dir that keeps at most
// maxIdle mappings with no outstanding Get (least recently used are
// unmapped first).
func NewReader(dir string, maxIdle int) *Reader {
	return &Reader{dir: dir, max: maxIdle, maps: map[ID]*cachedMap{}}
}

// View is one use of a mapped object, from Reader.Get.
type View struct {
	r    *Reader
	c    *cachedMap
	done bool
}

// Bytes returns the object's bytes, read-only, valid until Done.
func (v *View) Bytes() []byte { return v.c.m.Bytes() }

// Done ends this use. The mapping stays cached for the next Get unless it
// is stale or over the Reader's limit.
func (v *View) Done() {
	if v.done {
		return
	}
	v.done = true
	r := v.r
	r.mu.Lock()
	defer r.mu.Unlock()
	v.c.users--
	if v.c.users == 0 && v.c.stale {
		_ = v.c.m.Close()
	}
	r.trim()
}

// Get returns a view of the sealed object id, mapping it if needed. Call
// Done on the view when finished with its bytes.
func (r *Reader) Get(id ID) (*View, error) {
	if err := id.check(); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(Path(r.dir, id), &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("objstore: reading object %s in %s: %w", id, r.dir, errors.Join(ErrNotFound, err))
		}
		return nil, fmt.Errorf("objstore: reading object %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("objstore: reading object %s: reader %w", id, ErrClosed)
	}
	r.clock++
	if c := r.maps[id]; c != nil {
		if c.ino == st.Ino && c.ctime == st.Ctim {
			c.users++
			c.used = r.clock
			return &View{r: r, c: c}, nil
		}
		// The id names another file now (the object was freed and made
		// again): retire the old mapping.
		r.retire(id, c)
	}
	m, err := Map(r.dir, id)
	if err != nil {
		return nil, err
	}
	// A file swapped between the stat and the open is caught by the next
	// Get: sealing and recycling both rename, which changes the ctime.
	c := &cachedMap{m: m, ino: st.Ino, ctime: st.Ctim, users: 1, used: r.clock}
	r.maps[id] = c
	r.trim()
	return &View{r: r, c: c}, nil
}

// Forget drops id's cached mapping (unmapped once its views are done); the
// runtime calls it when the owner says the object was released.
func (r *Reader) Forget(id ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.maps[id]; c != nil {
		r.retire(id, c)
	}
}

// Close unmaps every idle mapping; mappings with views still open are
// unmapped when their last view is done.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for id, c := range r.maps {
		r.retire(id, c)
	}
	return nil
}

func (r *Reader) retire(id ID, c *cachedMap) {
	delete(r.maps, id)
	c.stale = true
	if c.users == 0 {
		_ = c.m.Close()
	}
}

// trim unmaps the least recently used idle mappings beyond the limit.
func (r *Reader) trim() {
	idle := 0
	for _, c := range r.maps {
		if c.users == 0 {
			idle++
		}
	}
	for ; idle > r.max; idle-- {
		var victim ID
		oldest := ^uint64(0)
		for id, c := range r.maps {
			if c.users == 0 && c.used < oldest {
				victim, oldest = id, c.used
			}
		}
		r.retire(victim, r.maps[victim])
	}
}
