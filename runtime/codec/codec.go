// Package codec turns Go values into bytes and back for the object store and
// the wire. General values use CBOR (github.com/fxamacker/cbor/v2): it is
// fast, actively maintained, fuzzed, and its decoder enforces limits on
// nesting, array and map sizes, so corrupt input yields an error rather than
// a panic or a huge allocation.
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

// Marshal encodes v. Values the codec cannot carry (funcs, channels,
// unsafe pointers) are an error that names the offending type.
func Marshal(v any) ([]byte, error) {
	if err := Check(reflect.TypeOf(v)); err != nil {
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
