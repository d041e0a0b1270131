package transfer

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gray-ml/gray/runtime/objstore"
)

// AdoptingSource is StoreSource for a store whose directory other
// processes write into with objstore.CreateFile (a node's workers, which
// do not own its store): an object the store does not know yet, but whose
// sealed file is in its directory, is adopted (accounted in the store, one
// store reference, which the owner releases) and then served.
func AdoptingSource(s *objstore.Store) Source { return adoptingSource{s} }

type adoptingSource struct{ s *objstore.Store }

func (as adoptingSource) Open(k Key) ([]byte, func(), error) {
	data, release, err := storeSource(as).Open(k)
	if err == nil || !errors.Is(err, objstore.ErrNotFound) {
		return data, release, err
	}
	h, _ := k.objectHex()
	if aerr := as.s.Adopt(objstore.ID(h)); aerr != nil && !errors.Is(aerr, objstore.ErrExists) {
		return nil, nil, err
	}
	return storeSource(as).Open(k)
}

// DirSink writes fetched objects into the store directory dir of a store
// this process does not own (a worker filling its node's store): each
// object is created with objstore.CreateFile and sealed on Commit; the
// store's owner accounts it when it adopts it (AdoptingSource, or
// objstore.Store.Adopt). Fetching an object whose file exists already
// fails with an error wrapping objstore.ErrExists.
func DirSink(dir string) Sink { return &dirSink{dir: dir, writers: map[Key]*objstore.FileWriter{}} }

type dirSink struct {
	dir     string
	mu      sync.Mutex
	writers map[Key]*objstore.FileWriter
}

func (ds *dirSink) Create(k Key, size int64) ([]byte, error) {
	h, ok := k.objectHex()
	if !ok {
		return nil, fmt.Errorf("transfer: %q is not an object key; a store holds objects only", k)
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.writers[k] != nil {
		return nil, fmt.Errorf("transfer: object %s is already being received", h)
	}
	w, err := objstore.CreateFile(ds.dir, objstore.ID(h), size)
	if err != nil {
		return nil, err
	}
	ds.writers[k] = w
	return w.Bytes(), nil
}

func (ds *dirSink) take(k Key) *objstore.FileWriter {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	w := ds.writers[k]
	delete(ds.writers, k)
	return w
}

func (ds *dirSink) Commit(k Key) error {
	w := ds.take(k)
	if w == nil {
		return fmt.Errorf("transfer: committing %s: not created", k)
	}
	return w.Seal()
}

func (ds *dirSink) Abort(k Key) {
	if w := ds.take(k); w != nil {
		_ = w.Abort()
	}
}
