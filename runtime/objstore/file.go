package objstore

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gray-ml/gray/internal/owned"
)

// Path returns the file of the sealed object id in the store directory dir.
func Path(dir string, id ID) string { return filepath.Join(dir, string(id)) }

// Mapping is a read-only view of a sealed object, made by Map in any process
// on the node.
type Mapping struct {
	data   []byte
	mapped bool
}

// Bytes returns the object's bytes. They are read-only: writing faults (see
// Guard). They are valid until Close.
func (m *Mapping) Bytes() []byte { return m.data }

// Close unmaps the object. Slices into it must not be used afterwards.
func (m *Mapping) Close() error {
	if !m.mapped {
		return nil
	}
	m.mapped = false
	d := m.data
	m.data = nil
	if err := unix.Munmap(d); err != nil {
		return fmt.Errorf("objstore: munmap: %w", err)
	}
	return nil
}

// Map maps the sealed object id of the store directory dir read-only. It is
// what worker processes call: it needs no store, only the directory. The
// owner must keep the object pinned while the mapping is in use, so that it
// is not evicted or freed meanwhile (on Linux an evicted file stays readable
// through an existing mapping, but the store no longer accounts its memory).
func Map(dir string, id ID) (*Mapping, error) {
	if err := id.check(); err != nil {
		return nil, err
	}
	// Raw system calls: os.Open would also register the file with the
	// network poller, a wasted call on the path every worker read takes.
	fd, err := unix.Open(Path(dir, id), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("objstore: mapping object %s in %s: %w", id, dir, errors.Join(ErrNotFound, err))
		}
		return nil, fmt.Errorf("objstore: mapping object %s: %w", id, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("objstore: mapping object %s: fstat: %w", id, err)
	}
	if st.Size == 0 {
		return &Mapping{data: []byte{}}, nil
	}
	data, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("objstore: mapping object %s (%d bytes): %w", id, st.Size, err)
	}
	return &Mapping{data: data, mapped: true}, nil
}

// WaitSealed waits while another process of the node writes object id
// into the store directory dir (while "<id>.tmp" exists), polling, and
// reports whether the object is sealed there when that ends. It returns at
// once when no one is writing it, and false when ctx ends first. Two
// processes that pull the same object into one store race to create it;
// the loser waits for the winner's file with WaitSealed.
func WaitSealed(ctx context.Context, dir string, id ID) bool {
	p := Path(dir, id)
	for {
		if _, err := os.Stat(p); err == nil {
			return true
		}
		if _, err := os.Stat(p + tmpSuffix); err != nil {
			break // no one writes it (any more)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	_, err := os.Stat(p)
	return err == nil
}

// createMapped creates "<id>.tmp" of size bytes and maps it read-write. With
// a spare, it renames the spare's file and reuses its pages and its
// mapping. Fresh pages are allocated and mapped up front: one bulk
// operation in the kernel is much cheaper than a page fault per 4 KiB while
// the caller writes.
func createMapped(dir string, id ID, size int64, sp *spare) ([]byte, error) {
	f, wmap, err := createUnmapped(dir, id, size, sp)
	if err != nil || f == nil {
		return wmap, err
	}
	defer f.Close()
	data, err := mapWritable(f, size)
	if err != nil {
		_ = os.Remove(Path(dir, id) + tmpSuffix)
		return nil, fmt.Errorf("objstore: creating object %s (%d bytes): %w", id, size, err)
	}
	return data, nil
}

// createUnmapped creates "<id>.tmp" of size bytes. With a spare, it renames
// the spare's file and reuses its pages and its mapping (mapping them now
// if the spare has none: once mapped, a spare stays mapped, and reading
// into its mapping is the cheapest way to fill it). Otherwise it returns
// the file, open for writing, with no pages yet (nil for an empty object):
// written with pwrite, the kernel allocates each page as it copies into it,
// which costs far less than allocating the pages and then faulting each
// into a mapping (see benchmarks/results/cluster-objects.md, "Objects between nodes").
func createUnmapped(dir string, id ID, size int64, sp *spare) (f *os.File, wmap []byte, err error) {
	tmp := Path(dir, id) + tmpSuffix
	if sp != nil {
		wmap, err := reuseSpare(sp, tmp, size)
		if err == nil {
			return nil, wmap, nil
		}
		_ = os.Remove(sp.name)
		_ = os.Remove(tmp)
	}
	f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("objstore: creating object %s: %w", id, err)
	}
	if size == 0 {
		_ = f.Close()
		return nil, nil, nil
	}
	if err := unix.Ftruncate(int(f.Fd()), size); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, nil, fmt.Errorf("objstore: creating object %s (%d bytes): ftruncate: %w", id, size, err)
	}
	return f, nil, nil
}

// reuseSpare renames the spare's file to tmp, cut to size bytes, and
// returns its mapping, made now if it had none. On failure the spare's
// mapping is gone.
func reuseSpare(sp *spare, tmp string, size int64) ([]byte, error) {
	err := os.Rename(sp.name, tmp)
	if err == nil && sp.size != size {
		err = os.Truncate(tmp, size)
	}
	if err != nil || sp.wmap != nil {
		if err != nil {
			unmap(sp.wmap)
		}
		return sp.wmap, err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mapWritable(f, size)
}

// mapWritable allocates the pages of f's first size bytes and maps them
// read-write.
func mapWritable(f *os.File, size int64) ([]byte, error) {
	// Allocating all pages in one call is cheaper than faulting them in one
	// by one, and on tmpfs it fails early, with ENOSPC, when the file
	// system is too small, instead of with SIGBUS while writing.
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		return nil, fmt.Errorf("fallocate (is the store directory's file system full?): %w", err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return data, nil
}

// writeAt writes p at off of an object of size bytes being created, into
// its mapping if it has one, else through its file.
func writeAt(id ID, size int64, wmap []byte, f *os.File, p []byte, off int64) (int, error) {
	if off < 0 || off > size || int64(len(p)) > size-off {
		return 0, fmt.Errorf("objstore: object %s: writing %d bytes at offset %d overruns its %d bytes", id, len(p), off, size)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if wmap != nil {
		return copy(wmap[off:], p), nil
	}
	if f == nil {
		return 0, fmt.Errorf("objstore: object %s: written after Seal or Abort", id)
	}
	n, err := f.WriteAt(p, off)
	if err != nil {
		return n, fmt.Errorf("objstore: writing object %s (is the store directory's file system full?): %w", id, err)
	}
	return n, nil
}

// FileWriter is an object being written by a process that does not own the
// store (a worker). Fill Bytes (or write it with WriteAt), then Seal, then
// tell the owner to Adopt it.
type FileWriter struct {
	dir      string
	id       ID
	size     int64
	data     []byte
	f        *os.File // an unmapped object's file, until Seal or Abort
	done     bool
	reserved bool // made by OpenReserved: the owner seals it
}

// CreateFile starts object id of size bytes in the store directory dir,
// without the owner's bookkeeping: the owner accounts it when it Adopts it.
func CreateFile(dir string, id ID, size int64) (*FileWriter, error) {
	return createFile(dir, id, size, true)
}

// CreateFileUnmapped is CreateFile for an object written with WriteAt
// (Bytes is nil): its pages are allocated as they are written, which for a
// large object received from the network is much cheaper than mapping
// fresh pages.
func CreateFileUnmapped(dir string, id ID, size int64) (*FileWriter, error) {
	return createFile(dir, id, size, false)
}

func createFile(dir string, id ID, size int64, mapped bool) (*FileWriter, error) {
	if err := id.check(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("objstore: object %s: negative size %d", id, size)
	}
	if _, err := os.Stat(Path(dir, id)); err == nil {
		return nil, fmt.Errorf("objstore: creating object %s: %w", id, ErrExists)
	}
	w := &FileWriter{dir: dir, id: id, size: size}
	var err error
	if mapped {
		w.data, err = createMapped(dir, id, size, nil)
	} else {
		w.f, _, err = createUnmapped(dir, id, size, nil)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// WriteAt writes p at offset off of the object (io.WriterAt; safe for
// concurrent use on disjoint ranges). Writing beyond its size is an error.
func (w *FileWriter) WriteAt(p []byte, off int64) (int, error) {
	return writeAt(w.id, w.size, w.data, w.f, p, off)
}

// closeFile closes an unmapped object's file.
func (w *FileWriter) closeFile() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// OpenReserved maps, read-write, the object id that the owner reserved
// with Store.Reserve. Fill Bytes, then Finish; the owner seals it.
func OpenReserved(dir string, id ID) (*FileWriter, error) {
	if err := id.check(); err != nil {
		return nil, err
	}
	fd, err := unix.Open(Path(dir, id)+tmpSuffix, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("objstore: opening reserved object %s (did the owner Reserve it?): %w", id, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("objstore: opening reserved object %s: fstat: %w", id, err)
	}
	w := &FileWriter{dir: dir, id: id, size: st.Size, reserved: true}
	if st.Size > 0 {
		if w.data, err = unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return nil, fmt.Errorf("objstore: mapping reserved object %s (%d bytes): %w", id, st.Size, err)
		}
	}
	return w, nil
}

// Finish unmaps a reserved object's buffer; the owner then seals it.
func (w *FileWriter) Finish() error {
	if !w.reserved {
		return fmt.Errorf("objstore: object %s: Finish is for reserved objects; use Seal", w.id)
	}
	if w.done {
		return nil
	}
	w.done = true
	unmap(w.data)
	w.data = nil
	return nil
}

// Bytes returns the writable buffer.
func (w *FileWriter) Bytes() []byte { return w.data }

// Seal unmaps the buffer and publishes the object under its final name.
func (w *FileWriter) Seal() error {
	if w.reserved {
		return fmt.Errorf("objstore: object %s was reserved by the owner: Finish it and let the owner Seal it", w.id)
	}
	if w.done {
		return fmt.Errorf("objstore: object %s: Seal after Seal or Abort", w.id)
	}
	w.done = true
	if len(w.data) > 0 {
		if err := unix.Munmap(w.data); err != nil {
			return fmt.Errorf("objstore: sealing object %s: munmap: %w", w.id, err)
		}
	}
	w.data = nil
	w.closeFile()
	if err := os.Rename(Path(w.dir, w.id)+tmpSuffix, Path(w.dir, w.id)); err != nil {
		return fmt.Errorf("objstore: sealing object %s: %w", w.id, err)
	}
	return nil
}

// Abort discards the object (for a reserved one, the owner must also call
// Store.Abort).
func (w *FileWriter) Abort() error {
	if w.reserved {
		return w.Finish()
	}
	if w.done {
		return nil
	}
	w.done = true
	if len(w.data) > 0 {
		_ = unix.Munmap(w.data)
	}
	w.data = nil
	w.closeFile()
	return os.Remove(Path(w.dir, w.id) + tmpSuffix)
}

// DefaultCapacity is 30% of the memory available now (MemAvailable in
// /proc/meminfo), capped by the free space of dir's file system (for
// /dev/shm, its tmpfs size limit). Ray's default is likewise a share of
// system memory; 30% leaves room for the processes that use the objects.
func DefaultCapacity(dir string) (int64, error) {
	avail, err := memAvailable()
	if err != nil {
		return 0, err
	}
	c := avail * 3 / 10
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil {
		if free := int64(fs.Bavail) * int64(fs.Bsize); free < c {
			c = free
		}
	}
	if c <= 0 {
		return 0, fmt.Errorf("objstore: no memory available for the object store in %s; set a capacity", dir)
	}
	return c, nil
}

func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("objstore: reading free memory (set a capacity instead): %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("objstore: parsing MemAvailable %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("objstore: no MemAvailable in /proc/meminfo; set a capacity")
}

// writeOwner records "<pid> <start time>" of this process, so CleanStale can
// tell a live owner from a dead one even if its pid was reused.
func writeOwner(dir string) error {
	st, err := procStart(os.Getpid())
	if err != nil {
		st = "0"
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+" "+st+"\n"), 0o600); err != nil {
		return fmt.Errorf("objstore: writing owner of %s: %w", dir, err)
	}
	return nil
}

// procStart names a process together with its pid (owned.StartTime).
func procStart(pid int) (string, error) { return owned.StartTime(pid) }

// CleanStale removes store directories named gray-* under root (normally
// /dev/shm) whose owning process is gone, as left by a driver that was
// killed, and returns the ones it removed. Directories without an owner file
// are left alone. From a shell, the equivalent is to remove
// /dev/shm/gray-<session> once no Gray process uses it.
func CleanStale(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "gray-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		if st, err := procStart(pid); err == nil && st == f[1] {
			continue // owner alive
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

func randUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// ErrReadOnly is returned by Guard when the function wrote to a read-only
// object (a slice from Get, Map or the codec's zero-copy decoding).
var ErrReadOnly = errors.New("objstore: write to a read-only shared object; slices from Get are read-only, copy before writing")

// Guard runs fn in the calling goroutine with faults turned into panics
// (debug.SetPanicOnFault) and returns a write to a read-only object as an
// error wrapping ErrReadOnly that names the address, instead of letting the
// process die of SIGSEGV. Other panics propagate unchanged. Workers run task
// bodies under Guard.
func Guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if re, ok := r.(runtime.Error); ok {
			if a, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w (fault at address %#x: %v; or the slice was used after its object was unpinned or released)", ErrReadOnly, a.Addr(), re)
				return
			}
		}
		panic(r)
	}()
	return fn()
}
