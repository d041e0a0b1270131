// Package task defines what the driver and workers exchange about work:
// task specifications, arguments, result objects, task errors, resource
// requests, and the registry of remote functions and actor types that every
// process of a program fills identically at package initialisation.
package task

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/wire"
)

// Kind tells what a task does.
type Kind uint8

const (
	// KindFunc runs a remote function.
	KindFunc Kind = iota
	// KindActorCreate constructs an actor in its dedicated worker.
	KindActorCreate
	// KindActorMethod runs a method on an existing actor.
	KindActorMethod
	// KindActorRestore restores a restarted actor from its last
	// checkpoint: its one argument is the checkpoint's bytes.
	KindActorRestore
)

// Arg is one task argument: an encoded value, or a reference to an object
// whose value the task receives.
//
// A Shared argument is a reference that the driver resolved to an object in
// the node's shared-memory store: the worker maps it (Size bytes) by Ref.
//
// The fields are ordered so that an Arg takes 56 bytes (the flags fill the
// ID's padding): a queued task holds its arguments until it runs.
type Arg struct {
	Ref    ids.ObjectID
	IsRef  bool
	Shared bool
	// Keep marks an argument an actor keeps for its lifetime (a
	// gray.Shared parameter): the driver holds the object for the actor and
	// the worker keeps its mapping instead of copying it.
	Keep bool
	Data []byte
	Size int64
}

// Spec describes one task.
//
// NumReturns sits in Kind's padding: a Spec takes 72 bytes, so a spec and
// its one argument fill a 128-byte allocation (NewSpec) instead of 144; a
// queued task holds its spec until it runs.
type Spec struct {
	ID         ids.TaskID
	Kind       Kind
	NumReturns int32  // see Returns
	Func       string // function name, actor type name, or "Type.Method"
	Args       []Arg
	// The fields few tasks use (the actor of a method call, the GPUs of a
	// dispatched task, an actor's own resources), behind one pointer so a
	// queued plain task does not carry them; nil: all zero. Copies of a
	// spec share it: the setters replace it, never change it in place.
	rare *specRare
}

// specRare holds a Spec's rarely used fields.
type specRare struct {
	actor  ids.TaskID
	gpuIDs []int
	res    *Resources
}

// Actor returns the actor of a KindActorMethod task (zero for others).
func (s *Spec) Actor() ids.TaskID {
	if s.rare == nil {
		return ids.TaskID{}
	}
	return s.rare.actor
}

// SetActor sets the actor a KindActorMethod task calls.
func (s *Spec) SetActor(id ids.TaskID) { s.setRare(func(r *specRare) { r.actor = id }) }

// GPUIDs returns the GPUs the scheduler gave the task at dispatch.
func (s *Spec) GPUIDs() []int {
	if s.rare == nil {
		return nil
	}
	return s.rare.gpuIDs
}

// SetGPUIDs sets the GPUs the task may use (the scheduler's, at dispatch).
func (s *Spec) SetGPUIDs(gpus []int) {
	if len(gpus) == 0 && len(s.GPUIDs()) == 0 {
		return
	}
	s.setRare(func(r *specRare) { r.gpuIDs = gpus })
}

// OwnRes returns the resources a KindActorCreate spec asks for instead of
// those registered with the actor type (gray.ActorOptions); nil: those.
// Res gives the resources a task reserves either way.
func (s *Spec) OwnRes() *Resources {
	if s.rare == nil {
		return nil
	}
	return s.rare.res
}

// SetOwnRes sets the resources of one actor (see OwnRes).
func (s *Spec) SetOwnRes(r *Resources) { s.setRare(func(x *specRare) { x.res = r }) }

// setRare replaces s's rare fields with a copy that set changed, leaving
// any copy of s that shares them as it was.
func (s *Spec) setRare(set func(*specRare)) {
	r := new(specRare)
	if s.rare != nil {
		*r = *s.rare
	}
	set(r)
	if r.zero() {
		r = nil
	}
	s.rare = r
}

func (r *specRare) zero() bool {
	return r.actor == (ids.TaskID{}) && len(r.gpuIDs) == 0 && r.res == nil
}

// NewSpec returns a spec with room for nargs arguments. Up to four
// arguments share the spec's allocation (one allocation of 128 bytes for a
// one-argument task instead of 72 + 64 in two): a queued task holds its spec
// until it runs.
func NewSpec(nargs int) *Spec {
	switch nargs {
	case 0:
		return &Spec{}
	case 1:
		return specWith(func(a *[1]Arg) []Arg { return a[:] })
	case 2:
		return specWith(func(a *[2]Arg) []Arg { return a[:] })
	case 3:
		return specWith(func(a *[3]Arg) []Arg { return a[:] })
	case 4:
		return specWith(func(a *[4]Arg) []Arg { return a[:] })
	}
	return &Spec{Args: make([]Arg, nargs)}
}

// specWith allocates a spec and its argument array A together; args
// slices the array.
func specWith[A any](args func(*A) []Arg) *Spec {
	x := new(struct {
		s Spec
		a A
	})
	x.s.Args = args(&x.a)
	return &x.s
}

// Returns is how many return objects the task makes: NumReturns, and one
// (holding nil or the task's error) for a task that returns nothing.
func (s *Spec) Returns() int { return max(int(s.NumReturns), 1) }

// Return returns the ID of the spec's i-th return value.
func (s *Spec) Return(i int) ids.ObjectID { return ids.Return(s.ID, i) }

// Object is a stored value: its encoded bytes, or the error that the task
// meant to produce it raised instead. A Shared object's bytes (the codec's
// zero-copy format, Size bytes) live in the node's shared-memory object
// store under the object's ID instead of in Data; small objects travel
// inline in Data (plain CBOR) and never touch the file system.
type Object struct {
	Data   []byte
	Err    *TaskError
	Shared bool
	Size   int64
}

// TaskError is the value of every reference returned by a failed task.
type TaskError struct {
	Function string // the remote function, actor type or method
	Worker   string // the worker process that ran it, e.g. "worker 3 (pid 1234)"
	Message  string // what went wrong
	Stack    string // the remote stack, for panics
	Cause    error  // the failed argument or returned error, when there is one
}

// Error names the function and worker and includes the remote stack.
func (e *TaskError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s failed", e.Function)
	if e.Worker != "" {
		fmt.Fprintf(&b, " on %s", e.Worker)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Stack != "" {
		b.WriteString("\nremote stack:\n")
		b.WriteString(e.Stack)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *TaskError) Unwrap() error { return e.Cause }

// FirstLine returns s up to its first newline: what a failure that quotes
// another one (an argument's, a constructor's, a rebuild's) keeps of it,
// leaving out the remote stack that Error appends.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Resources is a resource request or a node's capacity.
type Resources struct {
	CPU    float64
	GPU    float64
	Custom map[string]float64
}

// String lists the non-zero amounts, e.g. "CPU=1 GPU=2 disk=1".
func (r Resources) String() string {
	parts := []string{}
	if r.CPU != 0 {
		parts = append(parts, fmt.Sprintf("CPU=%g", r.CPU))
	}
	if r.GPU != 0 {
		parts = append(parts, fmt.Sprintf("GPU=%g", r.GPU))
	}
	names := make([]string, 0, len(r.Custom))
	for k, v := range r.Custom {
		if v != 0 { // gray status read "A=0 used of CPU=7,A=2"
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%g", k, r.Custom[k]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// Entry is one registered remote function, actor type or actor method.
type Entry struct {
	Name       string
	Kind       Kind
	NumReturns int
	Res        Resources
	MaxCalls   int // 0: unlimited
	// MaxRestarts, for an actor type, is how many times an actor whose
	// process died is recreated and its calls replayed; 0: never, -1:
	// without limit.
	MaxRestarts int
	// NoRestarts, for an actor type, ends its actors when their process
	// dies even on a cluster, whose actors otherwise survive the loss of
	// their node (gray.NoRestarts).
	NoRestarts bool
	// CheckpointInterval, for an actor type, is the number of method
	// calls between checkpoints (0: none).
	CheckpointInterval int
	// Call runs a remote function on encoded arguments. Its large return
	// values go to out (nil: every value is returned encoded inline).
	Call func(ctx context.Context, args [][]byte, out ResultSink) ([][]byte, error)
	// New constructs an actor instance.
	New func(ctx context.Context, args [][]byte) (any, error)
	// Method runs a method on an actor instance; out as for Call.
	Method func(ctx context.Context, self any, args [][]byte, out ResultSink) ([][]byte, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]*Entry{}
)

// Register adds e. Registration happens at package initialisation, so a
// duplicate name is a programming error and panics with the name.
func Register(e *Entry) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[e.Name]; dup {
		panic(fmt.Sprintf("gray: %q is registered twice; remote function and actor names must be unique", e.Name))
	}
	registry[e.Name] = e
}

// Lookup returns the entry registered under name.
func Lookup(name string) (*Entry, error) {
	regMu.RLock()
	e := registry[name]
	regMu.RUnlock()
	if e == nil {
		return nil, fmt.Errorf("%q is not registered: register remote functions and actor types at package level (a var initialised with gray.Func*/gray.Actor*) so the driver and every worker know it", name)
	}
	return e, nil
}

// ErrWorkerDied is the cause of a task's error when its worker process died.
var ErrWorkerDied = RegisterSentinel(errors.New("the worker process died while running the task"))

// ErrFreed is the cause of the error a Get returns for an object that was
// released explicitly (gray.Free) before it.
var ErrFreed = RegisterSentinel(errors.New("the object was freed with gray.Free"))

// ErrActorDead is the cause of an error of a method call on an actor that
// was killed or whose process died.
var ErrActorDead = RegisterSentinel(errors.New("the actor is dead"))

// AppendSpec encodes s.
func AppendSpec(b []byte, s *Spec) []byte {
	b = append(b, s.ID[:]...)
	b = append(b, byte(s.Kind))
	b = wire.AppendString(b, s.Func)
	if s.Kind == KindActorMethod {
		actor := s.Actor()
		b = append(b, actor[:]...)
	}
	b = wire.AppendUvarint(b, uint64(s.NumReturns))
	b = wire.AppendUvarint(b, uint64(len(s.Args)))
	for i := range s.Args {
		a := &s.Args[i]
		var keep byte
		if a.Keep {
			keep = argKeep
		}
		if a.Shared {
			b = append(b, 2|keep)
			b = append(b, a.Ref[:]...)
			b = wire.AppendUvarint(b, uint64(a.Size))
		} else if a.IsRef {
			b = append(b, 1|keep)
			b = append(b, a.Ref[:]...)
		} else {
			b = append(b, 0)
			b = wire.AppendBytes(b, a.Data)
		}
	}
	gpus := s.GPUIDs()
	b = wire.AppendUvarint(b, uint64(len(gpus)))
	for _, g := range gpus {
		b = wire.AppendUvarint(b, uint64(g))
	}
	if s.Kind == KindActorCreate {
		b = appendRes(b, s.OwnRes())
	}
	return b
}

// DecodeSpec decodes a spec written by AppendSpec.
func DecodeSpec(d *wire.Dec) *Spec {
	s := &Spec{}
	d.Fixed(s.ID[:])
	s.Kind = Kind(d.Byte())
	s.Func = d.String()
	var rare specRare
	if s.Kind == KindActorMethod {
		d.Fixed(rare.actor[:])
	}
	s.NumReturns = int32(d.Uvarint())
	if n := d.Count(); n > 0 {
		s.Args = make([]Arg, n)
		for i := range s.Args {
			tag := d.Byte()
			s.Args[i].Keep = tag&argKeep != 0
			switch tag &^ argKeep {
			case 2:
				s.Args[i].Shared = true
				d.Fixed(s.Args[i].Ref[:])
				s.Args[i].Size = int64(d.Uvarint())
			case 1:
				s.Args[i].IsRef = true
				d.Fixed(s.Args[i].Ref[:])
			default:
				s.Args[i].Data = d.Bytes()
			}
		}
	}
	if n := d.Count(); n > 0 {
		rare.gpuIDs = make([]int, n)
		for i := range rare.gpuIDs {
			rare.gpuIDs[i] = int(d.Uvarint())
		}
	}
	if s.Kind == KindActorCreate {
		rare.res = decodeRes(d)
	}
	if !rare.zero() {
		r := rare
		s.rare = &r
	}
	return s
}

// AppendObject encodes o.
func AppendObject(b []byte, o *Object) []byte {
	if o.Err == nil && o.Shared {
		b = append(b, 2)
		return wire.AppendUvarint(b, uint64(o.Size))
	}
	if o.Err == nil {
		b = append(b, 0)
		return wire.AppendBytes(b, o.Data)
	}
	b = append(b, 1)
	return appendErr(b, o.Err)
}

func appendErr(b []byte, e *TaskError) []byte {
	b = wire.AppendString(b, e.Function)
	b = wire.AppendString(b, e.Worker)
	b = wire.AppendString(b, e.Message)
	b = wire.AppendString(b, e.Stack)
	var te *TaskError
	switch {
	case e.Cause == nil:
		return append(b, 0)
	case errors.As(e.Cause, &te):
		b = append(b, 1)
		return appendErr(b, te)
	default:
		b = append(b, 2)
		b = wire.AppendString(b, e.Cause.Error())
		names := sentinelsIn(e.Cause)
		b = wire.AppendUvarint(b, uint64(len(names)))
		for _, n := range names {
			b = wire.AppendString(b, n)
		}
		return b
	}
}

// DecodeObject decodes an object written by AppendObject.
func DecodeObject(d *wire.Dec) Object {
	switch d.Byte() {
	case 0:
		return Object{Data: d.Bytes()}
	case 2:
		return Object{Shared: true, Size: int64(d.Uvarint())}
	}
	return Object{Err: decodeErr(d, 0)}
}

func decodeErr(d *wire.Dec, depth int) *TaskError {
	e := &TaskError{Function: d.String(), Worker: d.String(), Message: d.String(), Stack: d.String()}
	switch d.Byte() {
	case 1:
		if depth > 64 {
			d.Err = errors.New("wire: task error nested too deeply")
			return e
		}
		e.Cause = decodeErr(d, depth+1)
	case 2:
		re := &RemoteError{Msg: d.String()}
		for range d.Count() {
			// A sentinel this process does not know keeps only its text.
			if s := sentinelNamed(d.String()); s != nil {
				re.Wraps = append(re.Wraps, s)
			}
		}
		e.Cause = re
	}
	return e
}
