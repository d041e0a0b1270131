package gray

import (
	"reflect"
	"runtime"
	"sync"
)

// References carried inside values.
//
// A Ref encoded into a value (a struct field, a slice or map of Refs) keeps
// its object alive for as long as something may decode it:
//
//   - an object whose value holds references (Put, a task's result) holds
//     each of them until the object itself is freed;
//   - a task argument whose value holds references is held by the task's
//     first return object, so at least until the task ends;
//   - a process that decodes a reference out of a value holds the object
//     until that decoded reference is collected, as for any Ref.
//
// Local mode (Options.Local) keeps the simpler rule: an encoded reference
// keeps its object for the session.

// nestTracker is a backend that tracks references inside values.
type nestTracker interface {
	Contain(parent ObjectID, children []ObjectID)
	Hold(id ObjectID)
}

// resultContainer is a worker: it reports the references inside task
// result i.
type resultContainer interface {
	ContainResult(i int, children []ObjectID)
}

var anyRefType = reflect.TypeFor[AnyRef]()

// refTypes caches, per type, whether a value of it may hold a Ref that the
// codec encodes: most values (numbers, numeric slices) cannot, and are not
// walked.
var refTypes sync.Map // reflect.Type -> bool

func mayHoldRef(t reflect.Type) bool {
	if v, ok := refTypes.Load(t); ok {
		return v.(bool)
	}
	r := holdsRef(t, map[reflect.Type]bool{})
	refTypes.Store(t, r)
	return r
}

func holdsRef(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other parts answer
	}
	seen[t] = true
	if t.Implements(anyRefType) {
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsRef(t.Elem(), seen)
	case reflect.Map:
		return holdsRef(t.Key(), seen) || holdsRef(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsRef(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// maxRefDepth bounds the walk; the codec refuses deeper values anyway.
const maxRefDepth = 64

// refsIn returns the IDs of the references the codec would encode inside
// v, or nil when there are none.
func refsIn(v any) []ObjectID {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if !mayHoldRef(rv.Type()) {
		return nil
	}
	var out []ObjectID
	walkRefs(rv, 0, &out)
	return out
}

func walkRefs(v reflect.Value, depth int, out *[]ObjectID) {
	if depth > maxRefDepth || !mayHoldRef(v.Type()) {
		return
	}
	if v.Kind() == reflect.Struct && v.Type().Implements(anyRefType) {
		if v.CanInterface() {
			if r, ok := v.Interface().(AnyRef); ok && r != nil && r.session() != nil && r.failure() == nil {
				*out = append(*out, r.ID())
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			walkRefs(v.Elem(), depth+1, out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkRefs(v.Index(i), depth+1, out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkRefs(it.Key(), depth+1, out)
			walkRefs(it.Value(), depth+1, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				walkRefs(v.Field(i), depth+1, out)
			}
		}
	}
}

// containRefs tells the backend which objects the value v of object id
// refers to, before it is stored. It reports whether v holds any.
func containRefs(b backend, id ObjectID, v any) bool {
	nt, ok := b.(nestTracker)
	if !ok {
		return false
	}
	children := refsIn(v)
	if len(children) == 0 {
		return false
	}
	nt.Contain(id, children)
	runtime.KeepAlive(v) // the references inside stay held until the claim is sent
	return true
}

// containResult is containRefs for return value i of the running task.
func containResult(b backend, i int, v any) {
	rc, ok := b.(resultContainer)
	if !ok {
		return
	}
	if children := refsIn(v); len(children) > 0 {
		rc.ContainResult(i, children)
	}
	runtime.KeepAlive(v)
}

// tracksNested reports whether b tracks references inside values, so an
// encoded reference need not keep its object for the session.
func tracksNested(b backend) bool {
	_, ok := b.(nestTracker)
	return ok
}

// holdArgRefs makes the first return object of c's task hold the objects
// named inside argument value v: the task's worker decodes them (and holds
// them itself) before it reports the result, and the claim ends when that
// result is freed, so they stay valid while the task runs. An actor's
// creation stores no result: the node ends its claim once the constructor
// has run.
func holdArgRefs(c *call, v any) {
	containRefs(c.s.b, c.spec.Return(0), v)
}
