package objects

import (
	"errors"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// ErrShutdown is returned by calls on a node that was shut down.
// It is a registered sentinel (task.RegisterSentinel), so errors.Is holds
// for it in a worker's task too.
var ErrShutdown = task.RegisterSentinel(errors.New("gray has been shut down (or was never initialised in this session): call gray.Init first"))

// API is the gray package's object calls on a Keeper (its backend's Put,
// Free, Drop...): each takes the node's lock (Config.Lock, Unlock) for
// the Keeper's matching call. The node embeds it, so they are its
// methods. Once the Keeper is shut they do nothing, or return
// ErrShutdown.
type API[T Task] struct{ k *Keeper[T] }

// API returns the Keeper's API.
func (k *Keeper[T]) API() *API[T] { return &API[T]{k} }

// under runs fn under the node's lock unless the Keeper is shut, and
// reports whether it ran.
func (a *API[T]) under(fn func(k *Keeper[T])) bool {
	ran := false
	a.read(func(k *Keeper[T]) {
		if !k.closed {
			fn(k)
			ran = true
		}
	})
	return ran
}

// read runs fn under the node's lock, shut or not.
func (a *API[T]) read(fn func(k *Keeper[T])) {
	a.k.lock()
	defer a.k.unlock()
	fn(a.k)
}

// Hold records that the driver decoded a reference to id out of a value.
func (a *API[T]) Hold(id ids.ObjectID) {
	a.under(func(k *Keeper[T]) { k.Hold(objtable.Holder{}, []ids.ObjectID{id}) })
}

// Contain records that the value of object parent refers to children: they
// are not freed before parent is.
func (a *API[T]) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	a.under(func(k *Keeper[T]) { k.Contain(parent, children) })
}

// Drop tells the node that the program holds no reference to the object:
// once no queued task needs it either, it is deleted. Only objects whose
// references never left the driver are dropped (see the gray package).
func (a *API[T]) Drop(id ids.ObjectID) {
	a.under(func(k *Keeper[T]) { k.Drop(objtable.Holder{}, id) })
}

// Free releases objects the program promised not to use again (gray.Free),
// without waiting for their references to be collected. Queued and running
// tasks that take one as an argument keep it until they end; otherwise its
// memory (shared pages included, which the store reuses for the next put) is
// released at once, and what remains under its ID is a small error saying
// it was freed, so a later Get fails clearly instead of waiting forever.
func (a *API[T]) Free(oids []ids.ObjectID) error {
	if !a.under(func(k *Keeper[T]) {
		for _, id := range oids {
			k.FreeNow(id)
		}
	}) {
		return ErrShutdown
	}
	return nil
}

// Put stores an object.
func (a *API[T]) Put(id ids.ObjectID, o task.Object) error {
	if !a.under(func(k *Keeper[T]) { k.Put(id, o) }) {
		return ErrShutdown
	}
	return nil
}

// PutEncoded stores a value of codec.InlineThreshold bytes or more in the
// shared-memory store: it is encoded straight into the object's pages
// (Keeper.Write, without the lock).
func (a *API[T]) PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error {
	if err := a.k.Write(id, size, encode); err != nil {
		return err
	}
	return a.Put(id, task.Object{Shared: true, Size: int64(size)})
}

// Objects returns how many objects the node's store holds.
func (a *API[T]) Objects() int {
	var n int
	a.read(func(k *Keeper[T]) { n = k.store.Len() })
	return n
}

// ObjectStats returns the counts of the driver's objects across nodes
// (zero outside a cluster).
func (a *API[T]) ObjectStats() state.ObjectStats {
	var s state.ObjectStats
	a.read(func(k *Keeper[T]) { s = k.Stats() })
	return s
}

// SharedDir returns the shared-memory store's directory ("" without one).
func (a *API[T]) SharedDir() string {
	if a.k.shared == nil {
		return ""
	}
	return a.k.shared.Dir()
}

// SharedStats returns the shared-memory store's bookkeeping.
func (a *API[T]) SharedStats() objstore.Stats {
	if a.k.shared == nil {
		return objstore.Stats{}
	}
	return a.k.shared.Stats()
}

// KeptBy returns how many claims the actor id holds on kept objects (for
// tests).
func (a *API[T]) KeptBy(id ids.ActorID) int {
	var n int
	a.read(func(k *Keeper[T]) { n = k.KeptBy(id) })
	return n
}

// Recorded returns how many objects the object table records a claim or
// a pending deletion for (for tests: none once everything is freed).
func (a *API[T]) Recorded() int {
	var n int
	a.read(func(k *Keeper[T]) { n = k.Recorded() })
	return n
}

// Object looks an object up by its ID.
func (a *API[T]) Object(id ids.ObjectID) (state.ObjectState, bool) {
	var o task.Object
	var ok bool
	a.read(func(k *Keeper[T]) { o, ok = k.store.Get(id) })
	if !ok {
		return state.ObjectState{}, false
	}
	st := state.ObjectState{Size: len(o.Data), Shared: o.Shared, Creator: id.Task()}
	if o.Shared {
		st.Size = int(o.Size)
	}
	if o.Err != nil {
		st.Failed = o.Err.Error()
	}
	return st, true
}
