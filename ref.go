package gray

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// ObjectID names an immutable object; String returns it as hex.
type ObjectID = ids.ObjectID

// AnyRef is a reference of any element type; every Ref[T] implements it.
type AnyRef interface {
	ID() ObjectID
	session() *session
	failure() error
	keeper() *refKeep
}

// Ref is a typed reference to an immutable object that exists now or will
// once the task producing it finishes. Refs are small values (one pointer):
// copy them freely, pass them as task arguments, or put them inside other
// values.
//
// An object is freed once no copy of its Ref remains (the driver learns it
// when Go's garbage collector runs) and no task needs it, or at once by
// Free. The results of a burst of calls (Remote calls with no Get, GetAll,
// Wait or Free between them) past its first eight are released in blocks
// of up to 63: such an object is freed once no reference of its block
// remains, which spares the burst a finalizer per reference. A program
// that keeps a few results of a burst of large results and drops the rest
// keeps the rest's objects too until then: Free what it drops.
type Ref[T any] struct {
	k *refKeep // nil: the zero Ref
}

// refKeep is shared by every copy of a Ref: the object's ID and session,
// and for a driver's reference, its lifetime. Once no copy remains
// (refKeep's finalizer runs) and no queued task needs the object, the
// driver frees it. In local mode, a reference that escaped into an encoded
// value is never dropped; with workers, the values holding it keep its
// object instead (refscan.go).
//
// A queued task's Ref costs this record alone (32 bytes, and the runtime's
// 48-byte finalizer record, or in a burst a share of one per block of 63:
// refblock.go): the finalizer is one function for all of them, so there is
// no closure per reference, and the Ref itself is a pointer.
type refKeep struct {
	id    ObjectID
	state atomic.Uint32 // refFreed, refEscaped, refNoSession
	s     *session
}

const (
	refFreed     = 1 << iota // Free was called: Get and Wait refuse the reference
	refEscaped               // encoded into a value in local mode: never dropped
	refNoSession             // made by Remote before Init: its use reports ErrNotInitialized
)

func (k *refKeep) freed() bool { return k.state.Load()&refFreed != 0 }

func (k *refKeep) mark(bit uint32) { k.state.Or(bit) }

// ID returns the object's ID.
func (r Ref[T]) ID() ObjectID {
	if r.k == nil {
		return ObjectID{}
	}
	return r.k.id
}

func (r Ref[T]) session() *session {
	if r.k == nil {
		return nil
	}
	return r.k.s
}

func (r Ref[T]) failure() error {
	if r.k == nil || r.k.state.Load()&refNoSession == 0 {
		return nil
	}
	return ErrNotInitialized
}

func (r Ref[T]) keeper() *refKeep { return r.k }

// String returns "Ref(<object ID>)", for logs and errors.
func (r Ref[T]) String() string { return "Ref(" + r.ID().String() + ")" }

// newRef returns a driver's (or a worker's held) reference: the object is
// dropped once no copy of it remains.
func newRef[T any](s *session, id ObjectID) Ref[T] {
	return Ref[T]{k: newKeep(s, id)}
}

// newKeep returns a record of its own, with its own finalizer (task
// results in a burst share one per block instead: refblock.go).
func newKeep(s *session, id ObjectID) *refKeep {
	k := &refKeep{id: id, s: s}
	runtime.SetFinalizer(k, dropRef)
	return k
}

// dropRef tells the backend that no copy of k's reference remains.
func dropRef(k *refKeep) {
	if k.state.Load()&refEscaped == 0 && !k.s.closed.Load() {
		k.s.b.Drop(k.id)
	}
}

// plainRef returns a reference that drops nothing when collected.
func plainRef[T any](s *session, id ObjectID) Ref[T] {
	return Ref[T]{k: &refKeep{id: id, s: s}}
}

// sessionlessRef returns the reference a call made before Init returns:
// its use reports ErrNotInitialized.
func sessionlessRef[T any]() Ref[T] {
	k := &refKeep{}
	k.mark(refNoSession)
	return Ref[T]{k: k}
}

// MarshalCBOR encodes the reference as its ID, so references can travel
// inside values; the receiving process resolves it in its own session.
func (r Ref[T]) MarshalCBOR() ([]byte, error) {
	id := r.ID()
	if r.k != nil && r.k.s != nil && !r.k.s.tracksNested() {
		r.k.mark(refEscaped)
	}
	return cbor.Marshal(id[:])
}

// UnmarshalCBOR decodes a reference written by MarshalCBOR.
func (r *Ref[T]) UnmarshalCBOR(b []byte) error {
	var raw []byte
	if err := cbor.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("gray: decoding a Ref: %w", err)
	}
	var id ObjectID
	if len(raw) != len(id) {
		return fmt.Errorf("gray: decoding a Ref: %d bytes, want %d", len(raw), len(id))
	}
	copy(id[:], raw)
	s := current.Load()
	if s != nil && id != (ObjectID{}) && s.tracksNested() {
		// This process now refers to the object too: hold it until
		// the decoded reference is collected.
		s.nested.Hold(id)
		*r = newRef[T](s, id)
		return nil
	}
	*r = plainRef[T](s, id)
	return nil
}

// check reports why r cannot be used in the current session.
func check(r AnyRef) (*session, error) {
	if err := r.failure(); err != nil {
		return nil, err
	}
	rs := r.session()
	if rs == nil {
		return nil, errors.New("gray: the zero Ref refers to nothing; use one returned by Remote or Put")
	}
	s := current.Load()
	if s == nil || rs.closed.Load() {
		return nil, fmt.Errorf("gray: reference %s: its session has been shut down: %w", r.ID(), ErrNotInitialized)
	}
	if rs != s {
		return nil, fmt.Errorf("gray: reference %s belongs to another gray session", r.ID())
	}
	if k := r.keeper(); k != nil && k.freed() {
		return nil, fmt.Errorf("gray: reference %s: %w; do not use a reference after freeing it", r.ID(), ErrFreed)
	}
	return s, nil
}

// Free releases the objects refs refer to now, rather than when Go's
// garbage collector finds that no Ref to them remains: the counterpart of
// Ray's internal free. The caller promises not to use those references
// (nor any copy of them, nor values decoded from their objects) again; a
// later Get or Wait on them, or a task given one as an argument, fails with
// an error wrapping ErrFreed. Tasks already queued or running with one of
// them as an argument keep it until they end.
//
// Free matters for large objects: a program that puts a large array,
// uses it and frees it lets the object store reuse the same shared-memory
// pages for the next put, which is several times faster than filling fresh
// ones (see Put). Freeing a reference twice, or one whose task has not
// finished, is fine.
//
// Free takes references of one type, so a []Ref[T] frees as it is:
//
//	gray.Free(ctx, refs...)
//
// References of different types go through AnyRef:
// gray.Free[gray.AnyRef](ctx, a, b), or a []gray.AnyRef.
func Free[R AnyRef](ctx context.Context, refs ...R) error {
	if len(refs) == 0 {
		return nil
	}
	var s *session
	oids := make([]ObjectID, 0, len(refs))
	for i, r := range refs {
		if any(r) == nil {
			return fmt.Errorf("gray: free: reference %d is nil", i)
		}
		if k := r.keeper(); k != nil && k.freed() {
			continue
		}
		rs, err := check(r)
		if err != nil {
			return fmt.Errorf("gray: free: reference %d: %w", i, err)
		}
		s = rs
		oids = append(oids, r.ID())
	}
	if len(oids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gray: free: %w", err)
	}
	s.refs.consume()
	if err := s.b.Free(oids); err != nil {
		return fmt.Errorf("gray: free: %w", err)
	}
	for _, r := range refs {
		if k := r.keeper(); k != nil {
			k.mark(refFreed)
		}
	}
	runtime.KeepAlive(refs)
	return nil
}

// Put stores v in the object store and returns its reference. Values the
// codec cannot carry (funcs, channels) are an error.
//
// A value whose encoding is codec.InlineThreshold (100 KiB) or more is
// encoded straight into the node's shared-memory object store, numeric
// slices in Apache Arrow's layout, so every process on the node reads it
// without a copy (see Get). One larger than the store's capacity is an
// error wrapping objstore.ErrTooLarge. Smaller values stay in the driver's
// memory and never touch the file system.
//
// Memory: the object is freed once no Ref to it remains and no task needs
// it, which the driver learns when Go's garbage collector runs. A program
// that knows it is done with a large object should call Free: the store
// then reuses its pages at once, and a put loop runs near memory-copy speed
// instead of filling fresh pages. A Ref encoded inside v (a struct field,
// a slice or map of Refs) counts like any other: the new object keeps the
// objects its Refs name until it is freed itself.
func Put[T any](ctx context.Context, v T) (Ref[T], error) {
	s, err := sess()
	if err != nil {
		return Ref[T]{}, err
	}
	id := s.b.NewPutID()
	if err := putValue(s, id, v); err != nil {
		return Ref[T]{}, fmt.Errorf("gray: put: %w", err)
	}
	return newRef[T](s, id), nil
}

// encodeLarge prepares v and reports whether it belongs in shared memory
// (there is a store, in folder dir, and the encoding is at least
// codec.InlineThreshold).
func encodeLarge(dir string, v any) (*codec.Encoding, bool, error) {
	if dir == "" || !mayBeLarge(v) {
		return nil, false, nil
	}
	enc, err := codec.Prepare(v)
	if err != nil {
		return nil, false, err
	}
	return enc, enc.Size() >= codec.InlineThreshold, nil
}

// mayBeLarge is false for values whose encoding is small whatever they
// hold (numbers, booleans, structs of those), which skips preparing the
// zero-copy encoding on the path of small puts and results.
func mayBeLarge(v any) bool {
	switch s := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return false
	case string:
		return len(s) >= codec.InlineThreshold/2
	}
	return true
}

// putValue stores v under id: in shared memory when large, inline otherwise.
func putValue(s *session, id ObjectID, v any) error {
	containRefs(s, id, v)
	enc, large, err := encodeLarge(s.sharedDir(), v)
	if err != nil {
		return err
	}
	if large {
		return s.store.PutEncoded(id, enc.Size(), func(dst []byte) error {
			_, err := enc.EncodeTo(dst)
			return err
		})
	}
	data, err := codec.Marshal(v)
	if err != nil {
		return err
	}
	return s.b.Put(id, task.Object{Data: data})
}

// Get waits for the object r refers to and returns its value. A failed
// task's error is returned as a *TaskError.
//
// Zero-copy rule: a large object (see Put) is decoded straight from the
// node's shared memory, so its numeric slices ([]float32, []float64,
// []int32, []int64, []uint8, wherever they sit in the value) point into a
// read-only mapping shared by every process on the node. They are
// read-only: copy before writing (slices.Clone; append copies by itself).
// Inside a task, a write is reported as an error on the task's references
// (wrapping objstore.ErrReadOnly); in the driver, it stops the program with
// "unexpected fault address" (SIGSEGV), never silently changing the object.
//
// Lifetime: in the driver, the value stays valid for as long as it (any
// slice pointing into it) is reachable, whether or not a Ref to the object
// is: v, _ := gray.Get(ctx, f.Remote(x)) is safe. The driver maps each
// object over a Go heap allocation, so Go's garbage collector keeps the
// mapping while a slice points into it; the store reuses the object's
// memory only once the collector finds none does (objstore package doc,
// "Lifetime of the owner's slices"). Holding such values after their
// objects are freed still holds their memory in the store. In a remote
// function, the slices are valid until the function returns. Actors receive private
// copies of large arguments and Get results, so they may keep them across
// calls; a parameter of type Shared[T] keeps its object without a copy
// for the actor's lifetime instead. An evicted object that a remote function made is rebuilt by
// re-running it; one made by Put cannot be and Get says so.
func Get[T any](ctx context.Context, r Ref[T]) (T, error) {
	var zero T
	s, err := check(r)
	if err != nil {
		return zero, err
	}
	s.refs.consume()
	objs, err := s.b.Get(ctx, []ObjectID{r.k.id})
	if err != nil {
		return zero, err
	}
	v, err := decodeObj[T](objs[0])
	runtime.KeepAlive(r.k) // Refs inside the value are held before r may be dropped
	return v, err
}

func decodeObj[T any](o task.Object) (T, error) {
	var v T
	if o.Err != nil {
		return v, o.Err
	}
	if err := decodeBytes(o.Data, &v); err != nil {
		return v, fmt.Errorf("gray: get: %w", err)
	}
	return v, nil
}

// GetAll waits for every object and returns their values in order. The
// first failure is returned, wrapped with its position.
func GetAll[T any](ctx context.Context, rs []Ref[T]) ([]T, error) {
	if len(rs) == 0 {
		return []T{}, nil
	}
	var s *session
	oids := make([]ObjectID, len(rs))
	for i, r := range rs {
		rsess, err := check(r)
		if err != nil {
			return nil, fmt.Errorf("gray: get: reference %d: %w", i, err)
		}
		s = rsess
		oids[i] = r.k.id
	}
	s.refs.consume()
	objs, err := s.b.Get(ctx, oids)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(rs) // Refs inside the values are held before rs may be dropped
	out := make([]T, len(rs))
	for i, o := range objs {
		v, err := decodeObj[T](o)
		if err != nil {
			return nil, fmt.Errorf("gray: get: reference %d of %d: %w", i, len(rs), err)
		}
		out[i] = v
	}
	return out, nil
}

// Wait returns once numReturns of refs are ready (their task finished,
// successfully or not) or timeout has passed (0: no time limit) or ctx is
// done. ready holds at most numReturns references, in the order given;
// remaining holds the rest, so together they are refs. Duplicate
// references are an error, as is a numReturns outside 1..len(refs).
//
// ready and remaining have the type of refs: from a []Ref[T], Get takes
// their elements as they are; a []AnyRef mixes types.
func Wait[R AnyRef](ctx context.Context, refs []R, numReturns int, timeout time.Duration) (ready, remaining []R, err error) {
	if numReturns < 1 || numReturns > len(refs) {
		return nil, nil, fmt.Errorf("gray: wait: numReturns is %d but must be between 1 and the number of references (%d)", numReturns, len(refs))
	}
	if timeout < 0 {
		return nil, nil, fmt.Errorf("gray: wait: negative timeout %v", timeout)
	}
	var s *session
	seen := make(map[ObjectID]int, len(refs))
	oids := make([]ObjectID, len(refs))
	for i, r := range refs {
		if any(r) == nil {
			return nil, nil, fmt.Errorf("gray: wait: reference %d is nil", i)
		}
		rs, err := check(r)
		if err != nil {
			return nil, nil, fmt.Errorf("gray: wait: reference %d: %w", i, err)
		}
		s = rs
		if j, dup := seen[r.ID()]; dup {
			return nil, nil, fmt.Errorf("gray: wait: references %d and %d are the same object %s; references passed to Wait must be unique", j, i, r.ID())
		}
		seen[r.ID()] = i
		oids[i] = r.ID()
	}
	s.refs.consume()
	ok, err := s.b.Wait(ctx, oids, numReturns, timeout)
	runtime.KeepAlive(refs)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range refs {
		if ok[i] && len(ready) < numReturns {
			ready = append(ready, r)
		} else {
			remaining = append(remaining, r)
		}
	}
	return ready, remaining, nil
}

// decodeBytes decodes either encoding: the zero-copy format of shared
// objects (slices pointing into data) or the CBOR of inline values.
func decodeBytes(data []byte, v any) error {
	if codec.IsZeroCopy(data) {
		return codec.DecodeZeroCopy(data, v)
	}
	return codec.Unmarshal(data, v)
}
