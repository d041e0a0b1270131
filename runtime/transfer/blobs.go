package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Blobs is a directory of content-addressed files (a node's cache of
// executables): the blob whose SHA-256 sum is S lives in the file named by
// S in hex, mode 0700. It is a Source and a Sink of BlobKeys. A received
// blob is written to a temporary file, its sum checked, and only then
// renamed into place, so a file under a sum's name always has that content.
// It is safe for concurrent use.
type Blobs struct {
	dir     string
	mu      sync.Mutex
	pending map[Key]*pendingBlob
}

type pendingBlob struct {
	f    *os.File
	data []byte // read-write mapping of f
	sum  [32]byte
}

// NewBlobs opens (creating it, mode 0700, if needed) the blob directory dir.
func NewBlobs(dir string) (*Blobs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transfer: creating the blob directory: %w", err)
	}
	return &Blobs{dir: dir, pending: map[Key]*pendingBlob{}}, nil
}

// Dir returns the blob directory.
func (b *Blobs) Dir() string { return b.dir }

// Path returns the file that holds (or would hold) the blob with this sum.
func (b *Blobs) Path(sum [32]byte) string {
	return filepath.Join(b.dir, hex.EncodeToString(sum[:]))
}

// Has reports whether the blob with this sum is present.
func (b *Blobs) Has(sum [32]byte) bool {
	fi, err := os.Stat(b.Path(sum))
	return err == nil && fi.Mode().IsRegular()
}

// AddFile copies the file at path into the directory (the driver adds its
// own executable this way) and returns its sum.
func (b *Blobs) AddFile(path string) ([32]byte, error) {
	var sum [32]byte
	src, err := os.Open(path)
	if err != nil {
		return sum, fmt.Errorf("transfer: adding a blob: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(b.dir, ".add-*")
	if err != nil {
		return sum, fmt.Errorf("transfer: adding %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), src)
	if err == nil {
		err = tmp.Chmod(0o700)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sum, fmt.Errorf("transfer: adding %s: %w", path, err)
	}
	copy(sum[:], h.Sum(nil))
	if err := os.Rename(tmp.Name(), b.Path(sum)); err != nil {
		return sum, fmt.Errorf("transfer: adding %s: %w", path, err)
	}
	return sum, nil
}

// Open returns the blob of k, mapped read-only until release.
func (b *Blobs) Open(k Key) ([]byte, func(), error) {
	sum, ok := k.blobSum()
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q is not a blob key", ErrNotFound, k)
	}
	return mapFile(b.Path(sum), sum)
}

// Create starts receiving the blob of k into a temporary file.
func (b *Blobs) Create(k Key, size int64) (Room, error) {
	sum, ok := k.blobSum()
	if !ok {
		return Room{}, fmt.Errorf("transfer: %q is not a blob key", k)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[k] != nil {
		return Room{}, fmt.Errorf("transfer: blob %x is already being received", sum)
	}
	f, err := os.CreateTemp(b.dir, ".recv-*")
	if err != nil {
		return Room{}, fmt.Errorf("transfer: receiving blob %x: %w", sum, err)
	}
	p := &pendingBlob{f: f, sum: sum}
	if size > 0 {
		err = f.Truncate(size)
		if err == nil {
			p.data, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		}
		if err != nil {
			p.discard()
			return Room{}, fmt.Errorf("transfer: receiving blob %x (%s): %w", sum, human(size), err)
		}
	}
	b.pending[k] = p
	return Room{Buf: p.data}, nil
}

func (p *pendingBlob) discard() {
	if p.data != nil {
		_ = unix.Munmap(p.data)
		p.data = nil
	}
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
}

func (b *Blobs) take(k Key) *pendingBlob {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[k]
	delete(b.pending, k)
	return p
}

// Commit checks the received bytes against k's sum and moves the file into
// place, executable by its owner. A mismatch is an error and keeps nothing.
func (b *Blobs) Commit(k Key) error {
	p := b.take(k)
	if p == nil {
		return fmt.Errorf("transfer: committing %s: not created", k)
	}
	got := sha256.Sum256(p.data)
	if got != p.sum {
		p.discard()
		return fmt.Errorf("transfer: blob %x arrived with sum %x: corrupted in transit, or the server's file changed; nothing was kept", p.sum, got)
	}
	var err error
	if p.data != nil {
		err = unix.Munmap(p.data)
		p.data = nil
	}
	if err == nil {
		err = p.f.Chmod(0o700)
	}
	if err == nil {
		err = p.f.Close()
	}
	if err == nil {
		err = os.Rename(p.f.Name(), b.Path(p.sum))
	}
	if err != nil {
		p.discard()
		return fmt.Errorf("transfer: storing blob %x: %w", p.sum, err)
	}
	return nil
}

// Abort drops a blob being received.
func (b *Blobs) Abort(k Key) {
	if p := b.take(k); p != nil {
		p.discard()
	}
}

// FileBlob serves the file at path as the blob with this sum (a driver
// serves its own executable this way, without copying it): Open maps it
// read-only. The sum is the caller's word: a receiver checks it (Blobs'
// Commit), so a file that changed since it was hashed is refused there.
func FileBlob(path string, sum [32]byte) Source { return fileBlob{path: path, sum: sum} }

type fileBlob struct {
	path string
	sum  [32]byte
}

func (fb fileBlob) Open(k Key) ([]byte, func(), error) {
	if sum, ok := k.blobSum(); !ok || sum != fb.sum {
		return nil, nil, fmt.Errorf("%w: %s is not blob %x", ErrNotFound, k, fb.sum)
	}
	return mapFile(fb.path, fb.sum)
}

// mapFile maps the file at path read-only until release (nil for an empty
// file); sum names it in errors.
func mapFile(path string, sum [32]byte) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, fmt.Errorf("%w: no blob %x at %s", ErrNotFound, sum, path)
		}
		return nil, nil, fmt.Errorf("transfer: opening blob %x: %w", sum, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: opening blob %x: %w", sum, err)
	}
	if fi.Size() == 0 {
		return nil, func() {}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: mapping blob %x: %w", sum, err)
	}
	var once sync.Once
	return data, func() { once.Do(func() { _ = unix.Munmap(data) }) }, nil
}
