// Package numeric reads numbers out of decoded JSON, YAML and result
// values, whatever Go type the decoder or the algorithm chose. It is a leaf
// package: the platform and tune both use it.
package numeric

import "encoding/json"

// Float returns v as a float64 when it is a number: any Go integer or
// float type, or a json.Number. Booleans and strings are not numbers.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
