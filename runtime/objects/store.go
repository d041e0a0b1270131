package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Store keeps the driver's immutable objects. The node calls it under its
// own lock, so implementations need not be safe for concurrent use.
//
// MemStore keeps every object in the driver's heap and objects travel to
// workers over their sockets. The shared-memory store (runtime/objstore)
// plugs in here: Put would place values above an inline threshold in shared
// memory and keep only a small descriptor in the Object, which workers map
// instead of receiving the bytes.
type Store interface {
	Put(id ids.ObjectID, o task.Object)
	Get(id ids.ObjectID) (task.Object, bool)
	Delete(id ids.ObjectID)
	Len() int
}

// MemStore is a Store in the driver's memory.
type MemStore struct{ m map[ids.ObjectID]task.Object }

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{m: map[ids.ObjectID]task.Object{}} }

// Put implements Store; objects are immutable, so a second Put of an
// ID keeps the first value.
func (s *MemStore) Put(id ids.ObjectID, o task.Object) {
	if _, ok := s.m[id]; !ok {
		s.m[id] = o
	}
}

// Get implements Store.
func (s *MemStore) Get(id ids.ObjectID) (task.Object, bool) {
	o, ok := s.m[id]
	return o, ok
}

// Delete implements Store.
func (s *MemStore) Delete(id ids.ObjectID) { delete(s.m, id) }

// Len implements Store.
func (s *MemStore) Len() int { return len(s.m) }
