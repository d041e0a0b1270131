package transfer

import (
	"errors"

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
// object is created with objstore.CreateFileUnmapped (its pages allocated
// as the bytes are written through its file) and sealed on Commit; the
// store's owner accounts it when it adopts it (AdoptingSource, or
// objstore.Store.Adopt). Fetching an object whose file exists already
// fails with an error wrapping objstore.ErrExists.
func DirSink(dir string) Sink {
	return newObjectSink(func(id objstore.ID, size int64) (*objstore.FileWriter, error) {
		return objstore.CreateFileUnmapped(dir, id, size)
	}, nil)
}
