package objstore

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Errors returned by the store. Test for them with errors.Is; the returned
// errors wrap them with the object id and sizes.
var (
	// ErrNotFound: no object with this id exists (never created, or freed
	// after its last reference was released).
	ErrNotFound = errors.New("objstore: no such object")
	// ErrEvicted: the object existed but was evicted to make room. The
	// runtime can rebuild it (lineage) and Create it again under the same id.
	ErrEvicted = errors.New("objstore: object was evicted")
	// ErrNotSealed: the object is still being written.
	ErrNotSealed = errors.New("objstore: object is not sealed yet")
	// ErrExists: an object with this id already exists.
	ErrExists = errors.New("objstore: object already exists")
	// ErrTooLarge: the object is larger than the whole store.
	ErrTooLarge = errors.New("objstore: object larger than the store's capacity")
	// ErrFull: the object fits the capacity, but pinned and in-progress
	// objects leave no room for it now.
	ErrFull = errors.New("objstore: store is full of pinned objects")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("objstore: store is closed")
	// ErrBadID: the id cannot be used as a file name.
	ErrBadID = errors.New("objstore: invalid object id")
)

// ID names an object. It must be 1 to 200 characters from [0-9A-Za-z_-];
// the runtime uses the hex form of its object IDs.
type ID string

const (
	tmpSuffix = ".tmp"
	ownerFile = ".owner"
)

func (id ID) check() error {
	if len(id) == 0 || len(id) > 200 {
		return fmt.Errorf("%w %q: length must be 1 to 200", ErrBadID, string(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return fmt.Errorf("%w %q: only 0-9, A-Z, a-z, _ and - are allowed", ErrBadID, string(id))
		}
	}
	return nil
}

// Options configure a Store.
type Options struct {
	// Dir is the directory holding the objects. It should be on a tmpfs
	// (shared memory); default /dev/shm/gray-<Session>. It is created if
	// missing and removed, with everything in it, by Close.
	Dir string
	// Session names the default directory; default "<pid>-<random>".
	Session string
	// Capacity is the most bytes the store holds; default DefaultCapacity.
	Capacity int64
	// OnEvict, if set, is called after an object is evicted, without the
	// store's lock held, in the goroutine whose Create or Adopt needed the
	// room. The runtime uses it to mark the object for lineage rebuild.
	OnEvict func(id ID, size int64)
}

type state uint8

const (
	creating state = iota
	sealed
	evicted
)

type entry struct {
	id     ID
	size   int64
	refs   int
	pins   int
	state  state
	inline bool
	data   []byte   // inline bytes, or the owner's view of the object (made by the first Get)
	win    *window  // data's window, for a large object in a file (nil: data is ordinary memory)
	wmap   []byte   // the owner's read-write mapping of an object it created (len >= size)
	wfile  *os.File // while creating an unmapped object (CreateUnmapped): its file
	recv   bool     // made by CreateUnmapped: its pages are worth keeping as a spare without a mapping
	lru    *list.Element
	spare  *spare // while reserved: the spare whose pages this object reuses
	isNew  bool   // while reserved: made by this reservation (not a rebuild)
}

// Store is the node's object store, owned by one process. It is safe for
// concurrent use.
type Store struct {
	dir      string
	capacity int64
	onEvict  func(ID, int64)

	mu        sync.Mutex
	closed    bool
	used      int64 // bytes of live objects
	spares    []*spare
	spareSeq  uint64
	spareUsed int64 // bytes of spare files
	pinned    int64 // bytes of pinned or in-progress objects
	drains    []*drain
	drained   int64  // bytes of drains: freed objects whose windows may still be referenced
	collects  uint64 // garbage collections run by reserve
	objects   map[ID]*entry
	lru       list.List // sealed, unpinned objects; front = most recently used
	evictions int64
	reused    int64 // bytes of objects created in a spare's pages
	fresh     int64 // bytes of objects created in fresh pages
}

// Stats is a snapshot of the store's bookkeeping.
type Stats struct {
	Capacity    int64 // bytes
	Used        int64 // bytes held by live objects (inline and in files)
	PinnedBytes int64 // bytes that cannot be evicted now
	Objects     int   // live objects, excluding evicted ones
	Evictions   int64 // objects evicted since Open
	SpareBytes  int64 // freed pages kept for reuse (dropped first when room is needed)
	// DrainingBytes: objects that left the store (freed or evicted) while
	// the owner's slices of them may still be in use; their pages are
	// reused once the garbage collector finds those slices gone.
	DrainingBytes int64
	ReusedBytes   int64 // bytes created since Open in the pages of freed objects
	FreshBytes    int64 // bytes created since Open in freshly allocated pages
}

// Open creates the store's directory and returns the store that owns it.
func Open(opts Options) (*Store, error) {
	dir := opts.Dir
	if dir == "" {
		sess := opts.Session
		if sess == "" {
			sess = strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(randUint64(), 36)
		}
		dir = filepath.Join("/dev/shm", "gray-"+sess)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("objstore: creating store directory: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	capacity := opts.Capacity
	if capacity <= 0 {
		var err error
		if capacity, err = DefaultCapacity(dir); err != nil {
			return nil, err
		}
	}
	return &Store{dir: dir, capacity: capacity, onEvict: opts.OnEvict, objects: map[ID]*entry{}}, nil
}

// Dir returns the store's directory, which workers pass to Map.
func (s *Store) Dir() string { return s.dir }

// Capacity returns the store's capacity in bytes.
func (s *Store) Capacity() int64 { return s.capacity }

// Stats returns a snapshot of the bookkeeping (after ending the drains
// whose windows the last garbage collection found unreachable).
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reclaimLocked()
	n := 0
	for _, e := range s.objects {
		if e.state != evicted {
			n++
		}
	}
	return Stats{Capacity: s.capacity, Used: s.used, PinnedBytes: s.pinned, Objects: n, Evictions: s.evictions, SpareBytes: s.spareUsed, DrainingBytes: s.drained, ReusedBytes: s.reused, FreshBytes: s.fresh}
}

// Writer is an object being written by the owner. Fill Bytes, then Seal or
// Abort. The buffer is the shared-memory file itself: there is no copy.
type Writer struct {
	s    *Store
	e    *entry
	done bool
}

// Bytes returns the object's writable buffer (len = the size given to
// Create). It may hold bytes of a freed object whose pages are reused: write
// all of it (codec.Encoding.EncodeTo does).
// It is nil for an object made by CreateUnmapped in fresh pages: use
// WriteAt.
func (w *Writer) Bytes() []byte {
	if w.e.wmap == nil {
		return nil
	}
	return w.e.wmap[:w.e.size:w.e.size]
}

// WriteAt writes p at offset off of the object (io.WriterAt; safe for
// concurrent use on disjoint ranges), into its mapping if it has one, else
// through its file. Writing beyond its size is an error.
func (w *Writer) WriteAt(p []byte, off int64) (int, error) {
	if w.done {
		return 0, fmt.Errorf("objstore: object %s: written after Seal or Abort", w.e.id)
	}
	return writeAt(w.e.id, w.e.size, w.e.wmap, w.e.wfile, p, off)
}

// ID returns the object's id.
func (w *Writer) ID() ID { return w.e.id }

// Seal makes the object immutable and visible to Get and Map. The buffer
// from Bytes must not be touched afterwards.
func (w *Writer) Seal() error {
	if w.done {
		return fmt.Errorf("objstore: object %s: Seal after Seal or Abort", w.e.id)
	}
	w.done = true
	return w.s.Seal(w.e.id)
}

// Abort drops the object being written and frees its room.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	return w.s.abort(w.e.id)
}

// Create starts an object of size bytes in shared memory, evicting
// least-recently-used unpinned objects if needed. The new object has one
// reference (the creator's) and counts as pinned until sealed. Creating an id
// that was evicted (a lineage rebuild) keeps its reference count.
func (s *Store) Create(id ID, size int64) (*Writer, error) {
	e, sp, err := s.begin(id, size)
	if err != nil {
		return nil, err
	}
	wmap, err := createMapped(s.dir, id, size, sp)
	if err != nil {
		s.cancelReserved(e)
		return nil, err
	}
	e.wmap = wmap
	return &Writer{s: s, e: e}, nil
}

// begin checks a new object's id and size and reserves its room, taking
// the spare whose pages it will reuse, if any.
func (s *Store) begin(id ID, size int64) (*entry, *spare, error) {
	if err := id.check(); err != nil {
		return nil, nil, err
	}
	if size < 0 {
		return nil, nil, fmt.Errorf("objstore: object %s: negative size %d", id, size)
	}
	e, victims, err := s.reserve(id, size, false)
	s.notify(victims)
	if err != nil {
		return nil, nil, err
	}
	sp := e.spare
	e.spare = nil
	return e, sp, nil
}

// cancelReserved gives back the room begin reserved, when the object's
// file could not be made.
func (s *Store) cancelReserved(e *entry) {
	s.mu.Lock()
	s.dropReserved(e)
	s.mu.Unlock()
}

// CreateUnmapped is Create for an object written with Writer.WriteAt, such
// as one received from another node: in fresh pages it makes no mapping
// (Bytes is nil) and the kernel allocates each page as WriteAt copies into
// it, which costs far less than allocating the pages and faulting each
// into a mapping. When it reuses a freed object's pages that kept their
// mapping, Bytes returns it (reading straight into it is cheaper still).
// Freed, its pages are kept for reuse like a mapped object's.
func (s *Store) CreateUnmapped(id ID, size int64) (*Writer, error) {
	e, sp, err := s.begin(id, size)
	if err != nil {
		return nil, err
	}
	f, wmap, err := createUnmapped(s.dir, id, size, sp)
	if err != nil {
		s.cancelReserved(e)
		return nil, err
	}
	e.wmap, e.wfile, e.recv = wmap, f, true
	return &Writer{s: s, e: e}, nil
}

// closeFile closes the file of an unmapped object being created.
func (e *entry) closeFile() {
	if e.wfile != nil {
		_ = e.wfile.Close()
		e.wfile = nil
	}
}

// PutInline stores a small object in the owner's memory: no file, no
// mapping. The store takes ownership of data (do not modify it afterwards).
// The object is sealed at once, has one reference and is accounted against
// the capacity like any other.
func (s *Store) PutInline(id ID, data []byte) error {
	if err := id.check(); err != nil {
		return err
	}
	e, victims, err := s.reserve(id, int64(len(data)), true)
	s.notify(victims)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e.data = data
	s.sealLocked(e)
	return nil
}

// Adopt records an object that another process on the node wrote and sealed
// with CreateFile and FileWriter.Seal. The owner makes room for it (evicting
// if needed); if it cannot, the file is removed and the error says why. The
// object gets one reference. An object the store has already (ErrExists)
// keeps its file: the file under its ID is that object's.
func (s *Store) Adopt(id ID) error {
	if err := id.check(); err != nil {
		return err
	}
	p := Path(s.dir, id)
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("objstore: adopting object %s: %w", id, errors.Join(ErrNotFound, err))
	}
	e, victims, err := s.reserve(id, fi.Size(), false)
	s.notify(victims)
	if err != nil {
		if !errors.Is(err, ErrExists) {
			_ = os.Remove(p)
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealLocked(e)
	return nil
}

// reserve makes room for size bytes and registers id as creating (or
// inline). Where drains (see window) hold the room or the pages it could
// reuse, it first runs one garbage collection, which ends those whose
// windows nothing references any more: cheaper than an eviction, and than
// filling fresh pages.
func (s *Store) reserve(id ID, size int64, inline bool) (*entry, []*entry, error) {
	e, victims, err := s.tryReserve(id, size, inline, true)
	if err == errCollect {
		s.collect()
		var more []*entry
		e, more, err = s.tryReserve(id, size, inline, false)
		victims = append(victims, more...)
	}
	return e, victims, err
}

// tryReserve is one attempt of reserve; with mayCollect, it returns
// errCollect where a collection could avoid an ErrFull, fresh pages
// (shouldCollectLocked), an eviction while new drains hold room, or where
// the objects it evicted drain, having reserved nothing (the objects it
// evicted, if any, stay evicted).
func (s *Store) tryReserve(id ID, size int64, inline, mayCollect bool) (*entry, []*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	e := s.objects[id]
	if e != nil && e.state != evicted {
		return nil, nil, fmt.Errorf("objstore: creating object %s: %w", id, ErrExists)
	}
	if size > s.capacity {
		return nil, nil, fmt.Errorf("objstore: object %s is %s but the store's capacity is %s; raise the object store capacity or send a smaller object: %w",
			id, human(size), human(s.capacity), ErrTooLarge)
	}
	if len(s.drains) > 0 {
		s.reclaimLocked()
		if mayCollect && s.shouldCollectLocked(size, inline) {
			return nil, nil, errCollect
		}
	}
	if s.pinned+s.drained+size > s.capacity {
		return nil, nil, s.fullLocked(id, size)
	}
	if mayCollect && s.used+s.drained+size > s.capacity && s.newDrainsLocked() {
		return nil, nil, errCollect // objects would be evicted for room that drains may hold
	}
	var reuse *spare
	if !inline && size >= recycleMin {
		reuse = s.takeSpareLocked(size) // before dropping spares for room
	}
	// Evicting an object that has a window makes it a drain, which frees
	// no room until a collection finds the window unreferenced: evict as
	// if those drains were free, then check.
	var victims []*entry
	var started int64 // bytes of the drains these evictions started
	for s.used+s.spareUsed+s.drained-started+size > s.capacity {
		if len(s.spares) > 0 { // free pages first
			s.dropSpareLocked(0)
			continue
		}
		if s.lru.Len() == 0 {
			break
		}
		v := s.lru.Back().Value.(*entry)
		d := s.drained
		s.evictLocked(v)
		started += s.drained - d
		victims = append(victims, v)
	}
	if s.used+s.spareUsed+s.drained+size > s.capacity {
		if reuse != nil {
			s.spares = append(s.spares, reuse)
			s.spareUsed += reuse.size
		}
		if mayCollect && s.drained > 0 {
			return nil, victims, errCollect
		}
		return nil, victims, s.fullLocked(id, size)
	}
	if reuse != nil {
		s.reused += size
	} else if !inline {
		s.fresh += size
	}
	if e == nil {
		e = &entry{id: id, refs: 1, isNew: true}
		s.objects[id] = e
	}
	e.size, e.state, e.inline, e.pins, e.spare, e.recv = size, creating, inline, 0, reuse, false
	s.used += size
	s.pinned += size
	return e, victims, nil
}

// fullLocked is the ErrFull error for an object id of size bytes.
func (s *Store) fullLocked(id ID, size int64) error {
	return fmt.Errorf("objstore: object %s needs %s but %s of the store's %s are pinned or being written and %s are freed or evicted objects whose slices the program still holds (%s free); release or unpin objects, drop those slices, or raise the capacity: %w",
		id, human(size), human(s.pinned), human(s.capacity), human(s.drained), human(s.capacity-s.used-s.drained), ErrFull)
}

func (s *Store) notify(victims []*entry) {
	if s.onEvict == nil {
		return
	}
	for _, v := range victims {
		s.onEvict(v.id, v.size)
	}
}

// evictLocked frees an unpinned sealed object's memory but keeps its entry
// (and reference count) so that Get reports ErrEvicted.
func (s *Store) evictLocked(e *entry) {
	s.lru.Remove(e.lru)
	e.lru = nil
	s.releaseMemory(e)
	e.state = evicted
	s.evictions++
}

// releaseMemory frees the memory of an object that leaves the store. A
// window the program may still read starts a drain instead (window.go).
func (s *Store) releaseMemory(e *entry) {
	win := e.win
	e.data, e.win = nil, nil
	s.used -= e.size
	if e.inline {
		return
	}
	wmap := e.wmap
	e.wmap = nil
	if win != nil {
		s.startDrainLocked(e, win, wmap)
		return
	}
	s.retireFileLocked(Path(s.dir, e.id), e.size, wmap, wmap != nil || e.recv)
}

func unmap(b []byte) {
	if len(b) > 0 {
		_ = unix.Munmap(b)
	}
}

func (s *Store) dropReserved(e *entry) {
	if e.spare != nil {
		unmap(e.spare.wmap)
		_ = os.Remove(e.spare.name)
		e.spare = nil
	}
	s.used -= e.size
	s.pinned -= e.size
	e.state = evicted
	e.data = nil
	if e.isNew || e.refs == 0 { // nobody referred to it before: forget it
		delete(s.objects, e.id)
	}
}

// Reserve makes room for an object of size bytes that another process on
// the node will write, reusing freed pages when it can: it creates
// "<id>.tmp", which that process opens with OpenReserved, fills and
// Finishes; then the owner calls Seal(id), or Abort(id) if the writer
// failed. Reserve then Seal moves a large task result into the store at
// memory speed, where CreateFile then Adopt must allocate fresh pages.
func (s *Store) Reserve(id ID, size int64) error {
	_, err := s.Create(id, size)
	return err
}

// Abort drops an object created or reserved but not sealed.
func (s *Store) Abort(id ID) error { return s.abort(id) }

func (s *Store) abort(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	if e == nil || e.state != creating {
		return fmt.Errorf("objstore: aborting object %s: %w", id, ErrNotFound)
	}
	unmap(e.wmap)
	e.wmap = nil
	e.closeFile()
	_ = os.Remove(Path(s.dir, id) + tmpSuffix)
	s.dropReserved(e)
	return nil
}

// Seal makes a created object immutable: its file is renamed to the name
// readers map (read-only). The owner's writable mapping is kept, unused, so
// that the pages can be reused without a new mapping once the object is
// freed.
func (s *Store) Seal(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	if e == nil || e.state != creating {
		return fmt.Errorf("objstore: sealing object %s: %w (Create it first)", id, ErrNotFound)
	}
	e.closeFile()
	if err := os.Rename(Path(s.dir, id)+tmpSuffix, Path(s.dir, id)); err != nil {
		return fmt.Errorf("objstore: sealing object %s: %w", id, err)
	}
	s.sealLocked(e)
	return nil
}

func (s *Store) sealLocked(e *entry) {
	e.state, e.isNew = sealed, false
	s.pinned -= e.size
	if e.refs == 0 { // released while being written
		s.freeLocked(e)
		return
	}
	if e.pins > 0 {
		s.pinned += e.size
		return
	}
	e.lru = s.lru.PushFront(e)
}

// Get pins a sealed object and returns its bytes, read-only (see the package
// doc). Call Unpin when done with them. Objects in files are mapped into the
// owner once and the mapping is shared by all Gets.
func (s *Store) Get(id ID) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	if !e.inline && e.data == nil {
		if e.size == 0 {
			e.data = []byte{}
		} else {
			data, win, err := s.mapWindow(id, e.size)
			if err != nil {
				return nil, err
			}
			e.data, e.win = data, win
		}
	}
	s.pinLocked(e)
	return e.data, nil
}

func (s *Store) lookupLocked(id ID) (*entry, error) {
	if s.closed {
		return nil, ErrClosed
	}
	e := s.objects[id]
	if e == nil {
		return nil, fmt.Errorf("objstore: object %s: %w", id, ErrNotFound)
	}
	switch e.state {
	case evicted:
		return nil, fmt.Errorf("objstore: object %s (%s): %w", id, human(e.size), ErrEvicted)
	case creating:
		return nil, fmt.Errorf("objstore: object %s: %w", id, ErrNotSealed)
	}
	return e, nil
}

// Contains reports whether id is sealed and readable now.
func (s *Store) Contains(id ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	return e != nil && e.state == sealed
}

// Size returns a sealed object's size in bytes.
func (s *Store) Size(id ID) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return 0, err
	}
	return e.size, nil
}

// Pin keeps a sealed object from being evicted until a matching Unpin. Pins
// nest. The runtime pins an object while any process reads it and while it
// is an argument of a queued or running task.
func (s *Store) Pin(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return err
	}
	s.pinLocked(e)
	return nil
}

func (s *Store) pinLocked(e *entry) {
	if e.pins == 0 {
		s.lru.Remove(e.lru)
		e.lru = nil
		s.pinned += e.size
	}
	e.pins++
}

// Pins returns how many pins object id holds now (0 for an unknown one).
func (s *Store) Pins(id ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[id]; e != nil {
		return e.pins
	}
	return 0
}

// Unpin undoes one Pin or Get. When the last pin goes, the object becomes
// the most recently used candidate for eviction, or is freed if its last
// reference was already released.
func (s *Store) Unpin(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	if e == nil || e.pins == 0 {
		return fmt.Errorf("objstore: unpinning object %s: not pinned", id)
	}
	e.pins--
	if e.pins > 0 {
		return nil
	}
	s.pinned -= e.size
	if e.refs == 0 {
		s.freeLocked(e)
		return nil
	}
	if e.state == sealed {
		e.lru = s.lru.PushFront(e)
	}
	return nil
}

// AddRef adds a reference to an existing object (sealed, being written or
// evicted).
func (s *Store) AddRef(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	if e == nil || e.refs == 0 {
		return fmt.Errorf("objstore: adding a reference to object %s: %w", id, ErrNotFound)
	}
	e.refs++
	return nil
}

// Release drops one reference. When none remain the object is freed (its
// file removed, its memory returned) at once, or at its last Unpin if it is
// still pinned. An evicted object is forgotten, so Get then says
// ErrNotFound.
func (s *Store) Release(id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[id]
	if e == nil || e.refs == 0 {
		return fmt.Errorf("objstore: releasing object %s: %w", id, ErrNotFound)
	}
	e.refs--
	if e.refs > 0 || e.pins > 0 || e.state == creating {
		return nil // freed at the last Unpin, or when sealed
	}
	s.freeLocked(e)
	return nil
}

func (s *Store) freeLocked(e *entry) {
	if e.state == sealed {
		if e.lru != nil {
			s.lru.Remove(e.lru)
			e.lru = nil
		}
		s.releaseMemory(e)
	}
	delete(s.objects, e.id)
}

// Close removes the store's directory and unmaps the owner's writable
// mappings. Slices from Get stay valid while they are referenced: their
// windows keep the removed files' pages until the garbage collector finds
// them unreachable (see the package doc).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, e := range s.objects {
		unmap(e.wmap)
		e.closeFile()
		e.data, e.win, e.wmap = nil, nil, nil
	}
	for _, sp := range s.spares {
		unmap(sp.wmap)
	}
	for _, d := range s.drains {
		unmap(d.wmap)
		d.win.drain = nil
	}
	s.objects, s.spares, s.spareUsed = nil, nil, 0
	s.drains, s.drained = nil, 0
	s.used, s.pinned = 0, 0
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("objstore: removing %s: %w", s.dir, err)
	}
	return nil
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB (%d bytes)", float64(n)/(1<<30), n)
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}
