package transfer

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gray-ml/gray/runtime/objstore"
)

// StoreSource serves the sealed objects of s under their ObjectKeys. Each
// object is pinned while it is being sent (so it is neither evicted nor
// reused under the transfer) and unpinned after. Missing and evicted objects
// are ErrNotFound.
func StoreSource(s *objstore.Store) Source { return storeSource{s} }

type storeSource struct{ s *objstore.Store }

func (ss storeSource) Open(k Key) ([]byte, func(), error) {
	h, ok := k.objectHex()
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q is not an object key", ErrNotFound, k)
	}
	id := objstore.ID(h)
	data, err := ss.s.Get(id) // pins
	if err != nil {
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrEvicted) || errors.Is(err, objstore.ErrNotSealed) {
			return nil, nil, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return nil, nil, err
	}
	var once sync.Once
	return data, func() { once.Do(func() { _ = ss.s.Unpin(id) }) }, nil
}

// StoreSink writes fetched objects straight into s's shared memory, and
// seals them on Commit: into a freed object's pages that are still mapped
// (objstore.Store.CreateUnmapped), the bytes are read from the socket
// straight into the mapping; into fresh pages, they are written through
// the object's file, which allocates each page as it is filled instead of
// faulting it into a new mapping. A committed object has one store reference,
// which the caller owns (Release it when done). Fetching an object the store
// already holds fails with an error wrapping objstore.ErrExists: check
// Contains first.
func StoreSink(s *objstore.Store) Sink {
	return newObjectSink(s.CreateUnmapped, func(w *objstore.Writer) {
		_ = s.Abort(w.ID()) // the writer is spent; drop the object itself
	})
}

// objectWriter writes one received object.
type objectWriter interface {
	Bytes() []byte // nil: write it with WriteAt
	io.WriterAt
	Seal() error
	Abort() error
}

// objectSink is a Sink of objects, each written through a writer that
// create makes; sealFailed, if set, cleans up after a Seal that failed.
type objectSink[W objectWriter] struct {
	create     func(id objstore.ID, size int64) (W, error)
	sealFailed func(W)
	mu         sync.Mutex
	writers    map[Key]W
}

func newObjectSink[W objectWriter](create func(objstore.ID, int64) (W, error), sealFailed func(W)) *objectSink[W] {
	return &objectSink[W]{create: create, sealFailed: sealFailed, writers: map[Key]W{}}
}

func (sk *objectSink[W]) Create(k Key, size int64) (Room, error) {
	h, ok := k.objectHex()
	if !ok {
		return Room{}, fmt.Errorf("transfer: %q is not an object key; a store holds objects only", k)
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if _, busy := sk.writers[k]; busy {
		return Room{}, fmt.Errorf("transfer: object %s is already being received", h)
	}
	w, err := sk.create(objstore.ID(h), size)
	if err != nil {
		return Room{}, err
	}
	sk.writers[k] = w
	if b := w.Bytes(); b != nil || size == 0 {
		return Room{Buf: b}, nil
	}
	return Room{At: w}, nil
}

func (sk *objectSink[W]) take(k Key) (W, bool) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	w, ok := sk.writers[k]
	delete(sk.writers, k)
	return w, ok
}

func (sk *objectSink[W]) Commit(k Key) error {
	w, ok := sk.take(k)
	if !ok {
		return fmt.Errorf("transfer: committing %s: not created", k)
	}
	if err := w.Seal(); err != nil {
		if sk.sealFailed != nil {
			sk.sealFailed(w)
		}
		return err
	}
	return nil
}

func (sk *objectSink[W]) Abort(k Key) {
	if w, ok := sk.take(k); ok {
		_ = w.Abort()
	}
}
