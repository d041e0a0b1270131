// Package codec turns Go values into bytes and back for the object store and
// the wire.
//
// Two encodings:
//
//   - Marshal/Unmarshal: plain CBOR, for small values that travel inline
//     with a task or reply (below InlineThreshold).
//   - Prepare/EncodeTo/DecodeZeroCopy: the zero-copy format for the object
//     store. Numeric slices ([]float32, []float64, []int32, []int64, []uint8,
//     wherever they sit: struct fields, map values, slice elements,
//     interfaces) are laid out as 64-byte aligned Apache Arrow values buffers
//     after a CBOR header, and DecodeZeroCopy returns slices that point into
//     the given buffer (the shared-memory mapping) without a copy.
//
// General values use CBOR (github.com/fxamacker/cbor/v2): it is fast,
// actively maintained, fuzzed, handles any Go struct/map/slice without a
// schema or generated code, and its decoder checks well-formedness and
// enforces limits on nesting, array and map sizes before allocating, so
// corrupt input yields an error rather than a panic or a huge allocation.
//
// # Read-only rule
//
// Slices decoded by DecodeZeroCopy from an object-store mapping are
// read-only: the mapping is PROT_READ and shared by every process on the
// node. Copy before writing (slices.Clone). A write faults; under
// objstore.Guard it becomes an error, otherwise the process dies with
// "unexpected fault address". The slices are also valid only while the
// object stays mapped. Their capacity equals their length, so append always
// copies.
//
// Values the codec cannot carry (funcs, channels, unsafe pointers, complex
// numbers), also when held in interface-typed fields, are an error at
// encode time naming the field and type. So is a value that refers to
// itself (n.Next = n): CBOR has no back-references.
package codec

import (
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{Sort: cbor.SortNone}).EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{
		MaxNestedLevels:  64,
		MaxArrayElements: 1<<31 - 1,
		MaxMapPairs:      1 << 24,
	}).DecMode(); err != nil {
		panic(err)
	}
}

// Marshal encodes v in plain CBOR, for small values sent inline (see
// InlineThreshold); large values go through Prepare/EncodeTo into the object
// store instead. Values the codec cannot carry (funcs, channels, unsafe
// pointers, also inside interface-typed fields) are an error that names the
// offending type.
func Marshal(v any) ([]byte, error) {
	if b, ok := marshalInt(v); ok {
		return b, nil
	}
	if err := CheckValue(v); err != nil {
		return nil, err
	}
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("codec: encoding %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes data into the value v points to.
func Unmarshal(data []byte, v any) error {
	if err := decMode.Unmarshal(data, v); err != nil {
		return fmt.Errorf("codec: decoding %T: %w", v, err)
	}
	return nil
}

// Check reports whether values of type t can be encoded, naming the first
// part of t that cannot.
func Check(t reflect.Type) error {
	return check(t, map[reflect.Type]bool{})
}

// CheckValue is Check for a value: beyond its static type it also looks
// inside interface-typed parts (fields, elements, map values) at the values
// they actually hold, which Check cannot see.
func CheckValue(v any) error {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil
	}
	ti := infoOf(rv.Type())
	if ti.err != nil || !ti.iface && !ti.cyclic {
		return ti.err
	}
	return checkValue(rv, ti, 0)
}

func checkValue(v reflect.Value, ti *typeInfo, depth int) error {
	if ti.cyclic {
		return checkCycles(v)
	}
	if !ti.iface {
		return nil
	}
	if depth > maxNesting {
		return fmt.Errorf("codec: value nested more than %d levels deep (is it cyclic?)", maxNesting)
	}
	switch ti.t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		di := infoOf(v.Elem().Type())
		if di.err != nil {
			return di.err
		}
		return checkValue(v.Elem(), di, depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkValue(v.Elem(), ti.elem, depth+1)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkValue(v.Index(i), ti.elem, depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := checkValue(it.Value(), ti.elem, depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for _, f := range ti.fields {
			if err := checkValue(v.Field(f.index), f.info, depth+1); err != nil {
				return fmt.Errorf("field %s.%s: %w", ti.t, ti.t.Field(f.index).Name, err)
			}
		}
	}
	return nil
}

func check(t reflect.Type, seen map[reflect.Type]bool) error {
	if t == nil || seen[t] {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return fmt.Errorf("codec: cannot carry a value of type %s (%s values cannot be sent between processes)", t, t.Kind())
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return check(t.Elem(), seen)
	case reflect.Map:
		if err := check(t.Key(), seen); err != nil {
			return err
		}
		return check(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("cbor") == "-" {
				continue
			}
			if err := check(f.Type, seen); err != nil {
				return fmt.Errorf("field %s.%s: %w", t, f.Name, err)
			}
		}
	}
	return nil
}
