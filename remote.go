package gray

//go:generate go run ./internal/genremote -o remote_gen.go

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/task"
)

// Option configures a remote function or actor type at registration.
type Option func(*options)

type options struct {
	res         task.Resources
	cpuSet      bool
	maxCalls    int
	maxRestarts int // see MaxRestarts (actor_restart.go)
	ckptEvery   int // see CheckpointInterval
	noRestarts  bool
}

// CPUs sets how many CPUs each call (or the actor, for its lifetime)
// reserves. Remote functions default to 1, actors to 0.
func CPUs(n float64) Option { return func(o *options) { o.res.CPU = n; o.cpuSet = true } }

// GPUs sets how many GPUs each call (or the actor, for its lifetime)
// reserves; it receives their IDs from GPUIDs and in CUDA_VISIBLE_DEVICES.
func GPUs(n float64) Option { return func(o *options) { o.res.GPU = n } }

// Resource reserves n of the custom resource name.
func Resource(name string, n float64) Option {
	return func(o *options) {
		if o.res.Custom == nil {
			o.res.Custom = map[string]float64{}
		}
		o.res.Custom[name] = n
	}
}

// MaxCalls restarts a worker after it has run n calls of the function (Ray
// 0.2's max_calls), releasing whatever the function leaked.
func MaxCalls(n int) Option { return func(o *options) { o.maxCalls = n } }

func buildOptions(name string, defCPU float64, opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if !o.cpuSet {
		o.res.CPU = defCPU
	}
	if o.res.CPU < 0 || o.res.GPU < 0 || o.maxCalls < 0 {
		panic(fmt.Sprintf("gray: %q: resource amounts and MaxCalls must not be negative", name))
	}
	for k, v := range o.res.Custom {
		if v < 0 || k == "" {
			panic(fmt.Sprintf("gray: %q: custom resource %q=%g: names must be non-empty and amounts non-negative", name, k, v))
		}
	}
	return o
}

func register(name string, kind task.Kind, nret int, o options, e *task.Entry) {
	if name == "" {
		panic("gray: remote functions and actor types need a non-empty name")
	}
	if kind != task.KindActorCreate && (o.maxRestarts != 0 || o.ckptEvery != 0 || o.noRestarts) {
		panic(fmt.Sprintf("gray: %q: MaxRestarts, NoRestarts and CheckpointInterval are options of actor types, not of remote functions", name))
	}
	if o.noRestarts && (o.maxRestarts != 0 || o.ckptEvery != 0) {
		panic(fmt.Sprintf("gray: %q: NoRestarts contradicts MaxRestarts and CheckpointInterval; give one or the other", name))
	}
	e.Name, e.Kind, e.NumReturns, e.Res, e.MaxCalls = name, kind, nret, o.res, o.maxCalls
	e.MaxRestarts, e.CheckpointInterval, e.NoRestarts = o.maxRestarts, o.ckptEvery, o.noRestarts
	task.Register(e)
}

// call builds one task submission.
type call struct {
	s     *session
	spec  *task.Spec
	err   error
	drops []ObjectID // objects made for large arguments: no reference remains once submitted
}

// newCall is small enough to inline, so that a Remote whose arguments
// are plain values keeps its call on the stack: a queued task then costs
// no 64 bytes of garbage for it (init does the work).
func newCall(kind task.Kind, name string, nret, nargs int) *call {
	c := &call{}
	c.init(kind, name, nret, nargs)
	return c
}

func (c *call) init(kind task.Kind, name string, nret, nargs int) {
	c.s, c.err = sess()
	if c.err != nil {
		return
	}
	c.spec = task.NewSpec(nargs)
	c.spec.ID, c.spec.Kind, c.spec.Func, c.spec.NumReturns = c.s.b.NewTaskID(), kind, name, int32(nret)
}

// addArg sets argument i from x: a value of type A, or a Ref[A].
func addArg[A any](c *call, i int, x any) {
	if c.err != nil {
		return
	}
	if sp, ok := any((*A)(nil)).(sharedParam); ok {
		// A gray.Shared parameter (shared.go). Through the interface c
		// would escape; a copy does instead, only on this path.
		sc := *c
		sp.addSharedArg(&sc, i, x)
		*c = sc
		return
	}
	var v A
	switch a := x.(type) {
	case A:
		v = a
	case Ref[A]:
		if _, err := check(a); err != nil {
			c.err = fmt.Errorf("argument %d: %w", i+1, err)
			return
		}
		c.spec.Args[i] = task.Arg{IsRef: true, Ref: a.k.id}
		return
	case nil:
		// An untyped nil stands for A's zero value (a nil slice or map).
	default:
		c.err = fmt.Errorf("argument %d: got a %T, want a %s or a gray.Ref[%s]", i+1, x, typeName[A](), typeName[A]())
		return
	}
	// x holds v already; converting v to an interface again would
	// allocate (three times: each use below takes an interface).
	av := x
	if x == nil {
		av = v
	}
	holdArgRefs(c, av)
	var enc *codec.Encoding
	var large bool
	var err error
	if mayBeLarge(av) { // a small value skips asking the store where it is
		enc, large, err = encodeLarge(c.s.sharedDir(), av)
	}
	if err != nil {
		c.err = fmt.Errorf("argument %d: %w", i+1, err)
		return
	}
	if large {
		// A large value is passed by reference: put once into shared
		// memory, held by the task (and freed after it, see submit).
		id := c.s.b.NewPutID()
		err := c.s.store.PutEncoded(id, enc.Size(), func(dst []byte) error {
			_, err := enc.EncodeTo(dst)
			return err
		})
		if err != nil {
			c.err = fmt.Errorf("argument %d: %w", i+1, err)
			return
		}
		c.spec.Args[i] = task.Arg{IsRef: true, Ref: id}
		c.drops = append(c.drops, id)
		return
	}
	data, err := codec.Marshal(av)
	if err != nil {
		c.err = fmt.Errorf("argument %d: %w", i+1, err)
		return
	}
	c.spec.Args[i] = task.Arg{Data: data}
}

func typeName[A any]() string {
	var p *A
	return fmt.Sprintf("%T", p)[1:]
}

// submit sends the task; a problem found while building it becomes the
// value of its returns, so Get reports it.
func (c *call) submit() {
	if c.s == nil {
		return
	}
	if c.err != nil {
		e := &task.TaskError{Function: c.spec.Func, Worker: c.s.b.WorkerName(), Message: "calling " + c.spec.Func + ": " + c.err.Error(), Cause: c.err}
		for i := range c.spec.Returns() {
			_ = c.s.b.Put(c.spec.Return(i), task.Object{Err: e})
		}
		c.dropArgs()
		return
	}
	_ = c.s.b.Submit(c.spec) // errors are stored as the returns' values
	c.dropArgs()
}

func (c *call) dropArgs() {
	for _, id := range c.drops {
		c.s.b.Drop(id)
	}
}

func ref[R any](c *call, i int) Ref[R] {
	if c.s == nil { // c.err is ErrNotInitialized: a call needs a session
		return sessionlessRef[R]()
	}
	return resultRef[R](c.s, c.spec.Return(i))
}

// decodeArg decodes argument i of fn into v.
func decodeArg(fn string, i int, data []byte, v any) error {
	if sd, ok := v.(sharedDecoder); ok {
		v = sd.target(data) // a gray.Shared parameter (shared.go)
	}
	if err := decodeBytes(data, v); err != nil {
		return fmt.Errorf("%s: argument %d: %w", fn, i+1, err)
	}
	return nil
}

func checkArgs(fn string, args [][]byte, n int) error {
	if len(args) != n {
		return fmt.Errorf("%s takes %d arguments but was sent %d", fn, n, len(args))
	}
	return nil
}

// encodeResults encodes a task's return values.
//
// In a worker, a large value is written straight into the node's
// shared-memory store as the task's return object; its slot stays nil. The
// worker running the task is the sink (task.Entry.Call's out); without one
// (local mode) every value is encoded inline.
func encodeResults(sink task.ResultSink, fn string, vs ...any) ([][]byte, error) {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		if sink != nil {
			enc, large, err := encodeLarge(sink.SharedDir(), v)
			if err != nil {
				return nil, fmt.Errorf("%s: return value %d: %w", fn, i+1, err)
			}
			if large {
				err := sink.StoreResult(i, enc.Size(), func(dst []byte) error {
					_, err := enc.EncodeTo(dst)
					return err
				})
				if err != nil {
					return nil, fmt.Errorf("%s: return value %d: %w", fn, i+1, err)
				}
				containResult(sink, i, v)
				continue
			}
		}
		enc, err := codec.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: return value %d: %w", fn, i+1, err)
		}
		if sink != nil {
			containResult(sink, i, v)
		}
		out[i] = enc
	}
	return out, nil
}
