package rllib

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
)

type configField struct {
	ptr any
	typ reflect.Type
}

// jsonFields maps each json-tagged field of the struct dst points to onto
// a pointer to that field.
func jsonFields(dst any) map[string]configField {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	fields := make(map[string]configField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = configField{ptr: v.Field(i).Addr().Interface(), typ: f.Type}
	}
	return fields
}

func sortedKeys(m map[string]configField) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describeType names a Go type the way a user writing JSON thinks of it.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem()) + " or null"
	}
	return t.String()
}

// isSyntaxOrType reports errors of encoding/json's own type checks (as
// opposed to errors a field's UnmarshalJSON method explains itself).
func isSyntaxOrType(err error) bool {
	var se *json.SyntaxError
	var ie *json.InvalidUnmarshalError
	return errors.As(err, &se) || errors.As(err, &ie)
}
