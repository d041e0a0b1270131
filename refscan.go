package gray

import (
	"reflect"
	"runtime"
	"sync"

	"github.com/gray-ml/gray/runtime/task"
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
func containRefs(s *session, id ObjectID, v any) bool {
	if !s.tracksNested() {
		return false
	}
	children := refsIn(v)
	if len(children) == 0 {
		return false
	}
	s.nested.Contain(id, children)
	runtime.KeepAlive(v) // the references inside stay held until the claim is sent
	return true
}

// containResult is containRefs for return value i of the running task.
func containResult(sink task.ResultSink, i int, v any) {
	if children := refsIn(v); len(children) > 0 {
		sink.ContainResult(i, children)
	}
	runtime.KeepAlive(v)
}

// tracksNested reports whether the session's backend tracks references
// inside values, so an encoded reference need not keep its object for the
// session: all but local mode do.
func (s *session) tracksNested() bool { return s.nested != nil }

// sharedDir is the shared-memory store's directory, "" without one: then
// every value is encoded inline (encodeLarge).
func (s *session) sharedDir() string {
	if s.store == nil {
		return ""
	}
	return s.store.SharedDir()
}

// holdArgRefs makes the first return object of c's task hold the objects
// named inside argument value v: the task's worker decodes them (and holds
// them itself) before it reports the result, and the claim ends when that
// result is freed, so they stay valid while the task runs. An actor's
// creation stores no result: the node ends its claim once the constructor
// has run.
func holdArgRefs(c *call, v any) {
	containRefs(c.s, c.spec.Return(0), v)
}
