// Package objstore is the per-node object store: immutable objects kept in
// shared memory so that every process on the node reads them without a copy.
//
// # Layout
//
// An object is one file in the store's directory (by default
// /dev/shm/gray-<session>, a tmpfs, so the "file" is shared memory). A writer
// fills "<id>.tmp" and seals it by renaming it to "<id>": a name without the
// suffix is therefore always complete and immutable, and any process that
// knows the directory and the id can map it read-only with [Map]. The
// directory also holds ".owner", naming the process that owns the store, so
// that directories left behind by killed drivers can be found and removed
// with [CleanStale] (or by hand: rm -rf /dev/shm/gray-*).
//
// # Ownership
//
// One process per node (the driver) owns the [Store]: it alone keeps the
// bookkeeping (capacity, reference counts, pins, LRU order) and is the only
// one that deletes objects. Other processes use the pure functions [Map],
// [CreateFile] and [Path], and tell the owner over the runtime's own IPC what
// they did (for example "I sealed object X", which the owner records with
// [Store.Adopt]) or need ("pin X while my task reads it").
//
// Small objects need not touch the file system at all: [Store.PutInline]
// keeps them in the owner's memory under the same accounting.
//
// # How the runtime uses it
//
//   - Init (driver): CleanStale("/dev/shm"), then Open with the session id,
//     the capacity option and OnEvict (mark the object lost for lineage).
//     Workers learn Dir() at start. Shutdown: Close.
//   - Put / task results: enc := codec.Prepare(v). Below
//     codec.InlineThreshold the bytes travel inline (the driver may keep them
//     with PutInline). Otherwise the driver does Create(id, enc.Size()),
//     enc.EncodeTo(w.Bytes()), w.Seal(). A worker (a task's result or
//     Put) asks the driver to Reserve(id, size), which reuses freed pages,
//     fills OpenReserved(dir, id) and Finishes; the driver Seals when the
//     result or Put arrives, and Aborts if the task failed or the worker
//     died. (CreateFile then Adopt also works, but must allocate fresh
//     pages: several times slower for large objects.) An error from
//     Reserve or Adopt becomes the object's value.
//   - References: each object starts with one store reference; the runtime
//     calls Release when its own count of references (driver handles,
//     queued tasks, actor state) reaches zero. AddRef exists for runtimes
//     that mirror every reference.
//   - Pins: Pin each store argument when its task is queued and Unpin when
//     the task finishes or its worker dies; a driver-side Get pins (it is a
//     Get) until the value's reference is released.
//   - Workers read arguments through one Reader per process (NewReader(dir,
//     n); Get, codec.DecodeZeroCopy, View.Done when the task returns), which
//     keeps mappings of objects read again (weights, noise tables), and run
//     the task under Guard. Decoded slices are valid during the call (actors
//     copy what they keep). Map is the one-shot form.
//   - Objects received from another node: [Store.CreateUnmapped] (the
//     owner) or [CreateFileUnmapped] (a worker), filled with WriteAt at
//     their offsets: fresh pages are written through the file, which
//     allocates them as it copies, much cheaper than mapping fresh pages;
//     a freed object's pages come mapped (Bytes), cheaper still.
//   - Get returning ErrEvicted: rebuild by re-running the creating task,
//     which creates the same id again (its reference count is kept); an
//     object made by a driver's Put cannot be rebuilt and says so.
//
// # Read-only rule
//
// Slices returned by [Store.Get] and [Mapping.Bytes], and every slice the
// codec decodes from them, point into a PROT_READ mapping: they are
// read-only. Copy before writing. A write faults; run code that touches such
// slices under [Guard] to turn the fault into an error naming this rule,
// otherwise the Go runtime stops the process with "unexpected fault address"
// (SIGSEGV), which a worker's supervisor reports as a crashed task.
//
// # Lifetime of the owner's slices
//
// A slice from [Store.Get], and every value decoded from it, stays valid
// for as long as it is reachable, even after the object is released,
// evicted, or the store closed: the driver's users decode values and drop
// the Ref at once (v, _ := gray.Get(ctx, f.Remote(x))). A slice from
// [Map] or a [Reader] (workers) is valid only until Close or Done.
//
// How: Get maps the object's file (MAP_SHARED, PROT_READ, MAP_FIXED) over
// a Go heap allocation of its size rounded up to whole pages, a "window"
// (window.go). Go's collector follows interior pointers into its own heap,
// so any decoded slice keeps the allocation, and so the mapping, alive.
// The store holds the window while the object is in the store. When the
// object leaves it while its window may still be referenced, the object
// drains: its file is renamed out of the id's way (workers cannot find it;
// a rebuild makes a new one), and its pages are neither reused as a spare
// nor counted free (Stats.DrainingBytes; they count against the capacity)
// until the collector finds the window unreachable (its weak pointer is
// then nil), when they are reused at once. The window's finalizer then
// maps private anonymous memory over the range, so that the Go heap gets
// ordinary memory back. Where drains hold the room a Create needs (it
// would fail with ErrFull or evict objects) or the pages it could reuse,
// Create runs one runtime.GC first (once per call, and for evictions and
// reuse only for drains newer than the store's last such collection).
// Evicting an object that was read starts a drain too, so it frees room
// only once collected: Create evicts as if it did, collects, and fails
// with ErrFull if the room is still held.
//
// Why this is safe, and what it costs:
//
//   - The allocation comes from runtime.mallocgc with no type (it holds no
//     pointers) and without zeroing: make([]byte, n) would clear a reused
//     span, writing (and faulting in) every page just before the mapping
//     replaces them. The runtime allows the linkname (see mallocgc in
//     runtime/malloc.go). Allocations over 32 KiB get a span of their own,
//     page-aligned; smaller objects get a 40 KiB allocation. If the start
//     is not page-aligned (pages larger than the Go heap's 8 KiB), the
//     object is copied instead, and that copy is writable.
//   - The Go runtime never writes an allocated object that holds no
//     pointers: the collector keeps its mark bits outside the object (in
//     the span), a large object's type in its span, and it zeroes memory
//     only when allocating (which we skip) or, with GODEBUG=clobberfree,
//     when freeing, which happens after the finalizer gave the range back.
//     So PROT_READ never faults the runtime itself.
//   - The scavenger returns only free pages to the system; the window's
//     pages are allocated until its span is freed, after the finalizer.
//   - A finalizer, not runtime.AddCleanup: an object with a finalizer is
//     kept (resurrected) until the finalizer returns, so the heap cannot
//     place another value in the range while it is still the read-only
//     mapping. If the anonymous remap fails, the allocation is kept
//     reachable for good rather than returned.
//   - The race detector works (the package's tests pass under -race); the
//     mappings are made with the raw mmap system call because
//     unix.MmapPtr converts the returned address to a pointer, which
//     checkptr rejects for an address in the Go heap.
//   - A write through a window faults like any read-only mapping: "unexpected
//     fault address" without Guard, ErrReadOnly under it.
//   - Close removes the files and unmaps the writable mappings but not the
//     windows: slices still referenced stay readable (the kernel keeps a
//     removed file's pages while they are mapped) and their memory is freed
//     when they are collected. At process exit the kernel drops it all.
//   - Costs: the first Get of an object allocates and maps (no page is
//     touched); later Gets reuse the window. Windows count as Go heap
//     (runtime.MemStats, GOGC pacing, GOMEMLIMIT) though they take no
//     anonymous memory; their pages are the shared-memory file's. Each live
//     window splits the heap's mapping (up to two more entries in
//     /proc/self/maps); given back, the range merges again. An object freed
//     while the program holds slices of it keeps its memory until the next
//     collection after they are dropped, one collection later than an
//     unread object.
package objstore
