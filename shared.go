package gray

import (
	"errors"
	"sync"

	"github.com/gray-ml/gray/runtime/codec"
)

// Shared is a parameter type for an actor's constructor or methods that
// keeps a large object for the actor's lifetime without copying it: the
// actor's Value is decoded straight from the node's shared-memory object
// store, and every actor holding the same object reads the same pages (one
// copy in memory for all of them, like ES's noise table).
//
// The caller passes a Ref[T] or a T for a Shared[T] parameter, as for a T
// parameter:
//
//	var worker = gray.Actor1("Worker", func(ctx context.Context, noise gray.Shared[[]float32]) (*Worker, error) {
//		return &Worker{noise: noise}, nil
//	})
//	h, err := worker.Remote(ctx, noiseRef)
//
// Lifetime rule: in an actor, Value stays valid until the actor ends
// (Kill, its last driver handle dropped, its process gone) or until
// Release; meanwhile the object is neither freed nor evicted, whatever
// becomes of the caller's references. In a remote function it is valid
// until the function returns, like any argument.
//
// Read-only rule: the numeric slices in Value point into a read-only
// mapping, as Get's do (see Get): copy before writing. A write fails the
// call with an error wrapping objstore.ErrReadOnly instead of changing the
// object. Values below codec.InlineThreshold (100 KiB) travel inline and
// Value is then a private copy, with the same rules.
//
// A Shared is valid only as a parameter: it cannot be put, returned or
// sent inside another value (encoding one is an error). Copies of a Shared
// share its state, so Release through any copy releases them all.
type Shared[T any] struct{ st *sharedState[T] }

type sharedState[T any] struct {
	mu       sync.Mutex
	v        T
	data     []byte // the encoded object the value was decoded from
	released bool
}

// SharedValue wraps a value the caller owns in a Shared, to call code
// written for a Shared parameter directly (say, an actor's constructor
// run in the driver). Release only drops the value.
func SharedValue[T any](v T) Shared[T] {
	return Shared[T]{st: &sharedState[T]{v: v}}
}

// Value returns the object. It panics after Release (the memory behind
// the value may be gone), naming the rule; the zero Shared holds T's zero
// value.
func (s Shared[T]) Value() T {
	if s.st == nil {
		var zero T
		return zero
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.released {
		panic("gray: Shared.Value called after Release: the object's memory may be unmapped; keep the Shared until you are done with its value")
	}
	return s.st.v
}

// Release ends this actor's hold on the object before the actor ends: its
// mapping is dropped and, once no reference or other holder remains, the
// object is freed. Value must not be used afterwards, nor any slice taken
// from it. Releasing twice, or a Shared that holds nothing, does nothing.
func (s Shared[T]) Release() error {
	if s.st == nil {
		return nil
	}
	s.st.mu.Lock()
	if s.st.released {
		s.st.mu.Unlock()
		return nil
	}
	s.st.released = true
	data := s.st.data
	var zero T
	s.st.v, s.st.data = zero, nil
	s.st.mu.Unlock()
	cur := current.Load()
	if cur == nil || cur.kept == nil || data == nil {
		return nil // only an actor's worker keeps Shared arguments
	}
	_, err := cur.kept.ReleaseShared(data)
	return err
}

// MarshalCBOR refuses to encode a Shared: it stands for an object mapped
// in one process, meaningful only as a parameter.
func (Shared[T]) MarshalCBOR() ([]byte, error) {
	return nil, errShared
}

// UnmarshalCBOR refuses to decode a Shared, for the same reason.
func (*Shared[T]) UnmarshalCBOR([]byte) error { return errShared }

var errShared = errors.New("gray.Shared can only be the type of a remote function's or actor's parameter: pass a Ref (or the value) for it, and put, return or embed the value itself, not a Shared")

// sharedParam is implemented by *Shared[T]: addArg hands it a Shared[T]
// parameter's argument.
type sharedParam interface {
	addSharedArg(c *call, i int, x any)
}

// addSharedArg sets argument i like a T parameter's (a T or a Ref[T]) and
// marks it kept, so an actor's worker maps it for the actor's lifetime
// instead of copying it. A Shared[T] is passed as its value.
func (*Shared[T]) addSharedArg(c *call, i int, x any) {
	if s, ok := x.(Shared[T]); ok {
		x = s.Value()
	}
	addArg[T](c, i, x)
	if c.err == nil && c.spec.Args[i].IsRef {
		c.spec.Args[i].Keep = true
	}
}

// sharedDecoder is implemented by *Shared[T]: decodeArg decodes a Shared
// parameter's argument into the pointer target returns.
type sharedDecoder interface {
	target(data []byte) any
}

func (s *Shared[T]) target(data []byte) any {
	st := &sharedState[T]{}
	if codec.IsZeroCopy(data) {
		st.data = data
	}
	s.st = st
	return &st.v
}
