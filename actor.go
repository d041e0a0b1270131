package gray

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/fxamacker/cbor/v2"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// ActorType is a registered actor type whose instances are *T, made by
// Actor0..Actor4.
type ActorType[T any] struct {
	name string
	args []func(*call, int, any)
}

// Name returns the name the type is registered under.
func (t *ActorType[T]) Name() string { return t.name }

// Handle refers to one actor. Copy it freely and pass it to tasks and other
// actors, which can call its methods. The actor lives until Kill, or until
// the driver holds no copy of the handle that created it.
type Handle[T any] struct {
	id   ids.ActorID
	typ  string
	s    *session
	keep *handleKeep // driver handles only: its collection releases the actor
}

// handleKeep is shared by the copies of a driver's handle. A handle that was
// encoded (passed to a task or actor) marks it escaped: the program may still
// use the actor from elsewhere, so only Kill ends it.
type handleKeep struct {
	escaped *atomic.Bool
	_       [56]byte // see refKeep
}

// ID returns the actor's ID.
func (h Handle[T]) ID() ids.ActorID { return h.id }

// String names the actor.
func (h Handle[T]) String() string { return fmt.Sprintf("Actor(%s %s)", h.typ, h.id) }

type handleWire struct {
	ID   []byte `cbor:"1,keyasint"`
	Type string `cbor:"2,keyasint"`
}

// MarshalCBOR encodes the handle as the actor's ID and type, so handles can
// be passed to tasks and actors.
func (h Handle[T]) MarshalCBOR() ([]byte, error) {
	if h.keep != nil {
		h.keep.escaped.Store(true)
	}
	return cbor.Marshal(handleWire{ID: h.id[:], Type: h.typ})
}

// UnmarshalCBOR decodes a handle written by MarshalCBOR.
func (h *Handle[T]) UnmarshalCBOR(b []byte) error {
	var w handleWire
	if err := cbor.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("gray: decoding an actor handle: %w", err)
	}
	if len(w.ID) != len(h.id) {
		return fmt.Errorf("gray: decoding an actor handle: %d-byte ID", len(w.ID))
	}
	copy(h.id[:], w.ID)
	h.typ = w.Type
	h.s = current.Load()
	return nil
}

// Remote creates an actor: it reserves the type's resources, starts a
// dedicated worker process and runs the constructor there with args
// (values or references). It returns at once; calls made before the actor
// is ready wait for it. Unregistered types, wrong arguments and resource
// requests the node can never meet are errors.
func (t *ActorType[T]) Remote(ctx context.Context, args ...any) (Handle[T], error) {
	return t.remote(ctx, nil, args)
}

// remote creates an actor; res, when set, replaces the type's resources.
func (t *ActorType[T]) remote(ctx context.Context, res *task.Resources, args []any) (Handle[T], error) {
	if len(args) != len(t.args) {
		return Handle[T]{}, fmt.Errorf("gray: creating actor %s: its constructor takes %d arguments, got %d", t.name, len(t.args), len(args))
	}
	if err := ctx.Err(); err != nil {
		return Handle[T]{}, fmt.Errorf("gray: creating actor %s: %w", t.name, err)
	}
	c := newCall(task.KindActorCreate, t.name, 1, len(args))
	if c.spec != nil {
		c.spec.SetOwnRes(res)
	}
	for i, conv := range t.args {
		conv(c, i, args[i])
	}
	if c.err != nil {
		return Handle[T]{}, fmt.Errorf("gray: creating actor %s: %w", t.name, c.err)
	}
	err := c.s.b.Submit(c.spec)
	c.dropArgs() // the node holds large arguments until the constructor ran
	if err != nil {
		return Handle[T]{}, fmt.Errorf("gray: creating actor %s: %w", t.name, err)
	}
	runtime.KeepAlive(args)
	h := Handle[T]{id: c.spec.ID, typ: t.name, s: c.s}
	if o := c.s.owner; o != nil { // in a worker, only Kill ends actors
		esc := new(atomic.Bool)
		h.keep = &handleKeep{escaped: esc}
		s := c.s
		runtime.AddCleanup(h.keep, func(id ids.ActorID) {
			if !esc.Load() && !s.closed.Load() {
				o.Release(id)
			}
		}, h.id)
	}
	return h, nil
}

func newMethodCall[T any](h Handle[T], name string, nargs int) *call {
	c := newCall(task.KindActorMethod, name, 1, nargs)
	if c.err != nil {
		return c
	}
	c.spec.SetActor(h.id)
	switch {
	case h.s == nil:
		c.err = errors.New("the zero Handle refers to no actor; use one returned by an actor type's Remote")
	case h.s.closed.Load():
		c.err = fmt.Errorf("actor handle %s: its session has been shut down", h.id)
	case h.s != c.s:
		c.err = fmt.Errorf("actor handle %s belongs to another gray session", h.id)
	}
	runtime.KeepAlive(h.keep)
	return c
}

func self2[T any](name string, self any) (*T, error) {
	obj, ok := self.(*T)
	if !ok {
		return nil, fmt.Errorf("%s: the actor holds a %T, not a *%s", name, self, typeName[T]())
	}
	return obj, nil
}

// Kill ends the actor now: calls not yet run fail with ErrActorDead and its
// resources are released. A killed actor is never restarted, whatever its
// type's MaxRestarts.
func Kill[T any](h Handle[T]) error {
	s, err := sess()
	if err != nil {
		return err
	}
	if h.s == nil {
		return errors.New("gray: kill: the zero Handle refers to no actor")
	}
	if h.s != s {
		return fmt.Errorf("gray: kill: actor handle %s belongs to another or an ended gray session", h.id)
	}
	return s.b.Kill(h.id)
}
