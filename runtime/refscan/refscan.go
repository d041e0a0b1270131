// Package refscan finds the object references a value carries inside it
// (a struct field, a slice or map of references), so that the runtime can
// keep each referenced object alive while the value may still be decoded.
//
// It walks what the codec encodes: exported struct fields, pointers,
// interfaces, slices, arrays and maps. Most values (numbers, numeric
// slices) cannot hold a reference; a Scanner learns that once per type and
// does not walk them again.
package refscan

import (
	"reflect"
	"sync"

	"github.com/gray-ml/gray/runtime/ids"
)

// MaxDepth bounds the walk; the codec refuses deeper values anyway.
const MaxDepth = 64

// A Scanner finds the references of one reference type in values. It is
// safe for concurrent use.
type Scanner struct {
	ref reflect.Type
	id  func(any) (ids.ObjectID, bool)
	may sync.Map // reflect.Type -> bool: whether a value of it may hold a reference
}

// New returns a Scanner for references: values whose type implements the
// interface ref. id returns the object a reference names, and false for a
// reference that holds no object (the zero reference, or a failed one).
func New(ref reflect.Type, id func(any) (ids.ObjectID, bool)) *Scanner {
	return &Scanner{ref: ref, id: id}
}

// Find returns the objects named by the references inside v, or nil when
// there are none.
func (s *Scanner) Find(v any) []ids.ObjectID {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if !s.mayHold(rv.Type()) {
		return nil
	}
	var out []ids.ObjectID
	s.walk(rv, 0, &out)
	return out
}

func (s *Scanner) mayHold(t reflect.Type) bool {
	if v, ok := s.may.Load(t); ok {
		return v.(bool)
	}
	r := s.holds(t, map[reflect.Type]bool{})
	s.may.Store(t, r)
	return r
}

func (s *Scanner) holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type: its other parts answer
	}
	seen[t] = true
	if t.Implements(s.ref) {
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return s.holds(t.Elem(), seen)
	case reflect.Map:
		return s.holds(t.Key(), seen) || s.holds(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && s.holds(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func (s *Scanner) walk(v reflect.Value, depth int, out *[]ids.ObjectID) {
	if depth > MaxDepth || !s.mayHold(v.Type()) {
		return
	}
	if v.Kind() == reflect.Struct && v.Type().Implements(s.ref) {
		if v.CanInterface() {
			if id, ok := s.id(v.Interface()); ok {
				*out = append(*out, id)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			s.walk(v.Elem(), depth+1, out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			s.walk(v.Index(i), depth+1, out)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			s.walk(it.Key(), depth+1, out)
			s.walk(it.Value(), depth+1, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				s.walk(v.Field(i), depth+1, out)
			}
		}
	}
}
