package transfer

import (
	"errors"
	"fmt"
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

// StoreSink writes fetched objects straight into s's shared memory: the
// bytes are read from the socket into the object's file, with no copy in
// between, and sealed on Commit. A committed object has one store reference,
// which the caller owns (Release it when done). Fetching an object the store
// already holds fails with an error wrapping objstore.ErrExists: check
// Contains first.
func StoreSink(s *objstore.Store) Sink {
	return &storeSink{s: s, writers: map[Key]*objstore.Writer{}}
}

type storeSink struct {
	s       *objstore.Store
	mu      sync.Mutex
	writers map[Key]*objstore.Writer
}

func (ss *storeSink) Create(k Key, size int64) ([]byte, error) {
	h, ok := k.objectHex()
	if !ok {
		return nil, fmt.Errorf("transfer: %q is not an object key; a store holds objects only", k)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.writers[k] != nil {
		return nil, fmt.Errorf("transfer: object %s is already being received", h)
	}
	w, err := ss.s.Create(objstore.ID(h), size)
	if err != nil {
		return nil, err
	}
	ss.writers[k] = w
	return w.Bytes(), nil
}

func (ss *storeSink) take(k Key) *objstore.Writer {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	w := ss.writers[k]
	delete(ss.writers, k)
	return w
}

func (ss *storeSink) Commit(k Key) error {
	w := ss.take(k)
	if w == nil {
		return fmt.Errorf("transfer: committing %s: not created", k)
	}
	if err := w.Seal(); err != nil {
		_ = ss.s.Abort(w.ID()) // the writer is spent; drop the object itself
		return err
	}
	return nil
}

func (ss *storeSink) Abort(k Key) {
	if w := ss.take(k); w != nil {
		_ = w.Abort()
	}
}
