package codec

import (
	"fmt"
	"reflect"
	"sync"
)

// Cycles.
//
// CBOR has no back-references, and the encoder recurses into pointers: a
// value that reaches itself (n.Next = n) would recurse until the goroutine's
// stack overflows, a fatal error no recover can catch. Only values of
// recursive types (a type that contains itself through pointers, slices or
// maps) can form such a cycle without an interface in between, and values
// with interfaces are walked with a depth bound already (checkValue,
// toMirror). So the walk below runs for recursive types only: every other
// value pays one flag test.

// maxHops bounds the walk of an acyclic but deep value, so the walk itself
// cannot exhaust the stack; such a value is an error anyway.
const maxHops = 1 << 16

// ptrKey names one pointer on the walk's path. The type is part of the key:
// a struct and its first field share an address without forming a cycle.
type ptrKey struct {
	p uintptr
	t reflect.Type
}

// cycleWalk finds a pointer, map or slice that contains itself.
type cycleWalk struct {
	path []ptrKey            // the pointers from the root to the value walked
	deep map[ptrKey]struct{} // the same, once the path is long (see push)
}

// checkCycles reports an error when v reaches itself, or when it is so deep
// that it could not be decoded anyway. It also checks the values held in
// interfaces along the way, as CheckValue does.
func checkCycles(v reflect.Value) error {
	w := walkers.Get().(*cycleWalk)
	err := w.walk(v, 0)
	w.path, w.deep = w.path[:0], nil
	walkers.Put(w)
	return err
}

// walkers reuses walks' path buffers: a small value of a recursive type
// would otherwise pay an allocation for its check.
var walkers = sync.Pool{New: func() any { return &cycleWalk{path: make([]ptrKey, 0, shortPath)} }}

func (w *cycleWalk) walk(v reflect.Value, depth int) error {
	wi := walkInfoOf(v.Type())
	if wi.skip {
		return nil
	}
	if depth > maxHops {
		return fmt.Errorf("codec: value of type %s nested more than %d levels deep", v.Type(), maxHops)
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if ti := infoOf(v.Elem().Type()); ti.err != nil {
			return ti.err
		}
		return w.walk(v.Elem(), depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if err := w.push(v); err != nil {
			return err
		}
		err := w.walk(v.Elem(), depth+1)
		w.pop()
		return err
	case reflect.Map:
		if v.IsNil() || v.Len() == 0 {
			return nil
		}
		if err := w.push(v); err != nil {
			return err
		}
		it := v.MapRange()
		for it.Next() {
			if err := w.walk(it.Key(), depth+1); err != nil {
				return err
			}
			if err := w.walk(it.Value(), depth+1); err != nil {
				return err
			}
		}
		w.pop()
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if err := w.push(v); err != nil {
			return err
		}
		if err := w.elems(v, depth); err != nil {
			return err
		}
		w.pop()
	case reflect.Array:
		return w.elems(v, depth)
	case reflect.Struct:
		for _, i := range wi.fields {
			if err := w.walk(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *cycleWalk) elems(v reflect.Value, depth int) error {
	for i := range v.Len() {
		if err := w.walk(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// shortPath is the path length up to which push searches the path itself;
// beyond it, a map answers (a long linked list would be quadratic).
const shortPath = 16

// push adds the pointer of v (a pointer, map or slice) to the path, failing
// if it is on the path already: v then contains itself.
func (w *cycleWalk) push(v reflect.Value) error {
	k := ptrKey{p: v.Pointer(), t: v.Type()}
	var on bool
	if w.deep != nil {
		_, on = w.deep[k]
	} else {
		for _, x := range w.path {
			if x == k {
				on = true
				break
			}
		}
	}
	if on {
		return fmt.Errorf("codec: the value refers to itself (a cycle through a %s): cyclic values cannot be encoded; break the cycle, for example by storing indices instead of pointers", v.Type())
	}
	w.path = append(w.path, k)
	if w.deep == nil && len(w.path) > shortPath {
		w.deep = make(map[ptrKey]struct{}, 2*len(w.path))
		for _, x := range w.path {
			w.deep[x] = struct{}{}
		}
	} else if w.deep != nil {
		w.deep[k] = struct{}{}
	}
	return nil
}

func (w *cycleWalk) pop() {
	k := w.path[len(w.path)-1]
	w.path = w.path[:len(w.path)-1]
	if w.deep != nil {
		delete(w.deep, k)
	}
}

// walkInfo is what the walk needs of a type, computed once per type: the
// walk asks for every value it visits.
type walkInfo struct {
	skip   bool  // values hold nothing to follow, or encode themselves
	fields []int // struct: the indices of the fields the codec encodes
}

// walkInfos caches walkInfoOf: reflect.Type -> *walkInfo.
var walkInfos sync.Map

func walkInfoOf(t reflect.Type) *walkInfo {
	if wi, ok := walkInfos.Load(t); ok {
		return wi.(*walkInfo)
	}
	pt := reflect.PointerTo(t)
	wi := &walkInfo{skip: !mayPoint(t) ||
		t.Implements(cborMarshaler) || t.Implements(binaryMarshaler) ||
		pt.Implements(cborMarshaler) || pt.Implements(binaryMarshaler)}
	if !wi.skip && t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && f.Tag.Get("cbor") != "-" && mayPoint(f.Type) {
				wi.fields = append(wi.fields, i)
			}
		}
	}
	walkInfos.Store(t, wi)
	return wi
}

// mayPoint is false for types whose values hold no pointers, maps, slices
// or interfaces, so cannot lead anywhere: the walk skips them.
func mayPoint(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Struct:
		return true
	case reflect.Array:
		return mayPoint(t.Elem())
	}
	return false
}
