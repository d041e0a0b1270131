package envs

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Values in a Config.
//
// An environment sees the same Config wherever it is created, whether from
// a --env-config JSON string, a YAML experiment file, a checkpoint's
// metadata, in the driver or in a rollout-worker process, and whether it is
// built in or a plugin. Make and MakeVector normalize every Config into the
// JSON data model before calling a creator:
//
//   - numbers are float64 (an integer such as 6 is float64(6); read it with
//     ConfigInt, which rejects 6.5);
//   - strings are string, booleans bool, null is nil;
//   - lists are []any and objects map[string]any, holding the same types.
//
// Plugins receive the Config as a JSON object, which encoding/json decodes
// into exactly these types (numbers with an integral value are written
// without a decimal point, so a Python plugin reads 6 as an int).
//
// Non-finite numbers (NaN, ±Inf) cannot travel as JSON and are an error, as
// are values of any other type.

// NormalizeConfig returns a copy of cfg in the form documented above: every
// Go number type and json.Number becomes float64, maps with string keys
// become map[string]any and lists []any. It returns an error naming the
// key of a value it cannot represent. A nil cfg stays nil.
func NormalizeConfig(cfg Config) (Config, error) {
	if cfg == nil {
		return nil, nil
	}
	out := make(Config, len(cfg))
	for _, k := range sortedConfigKeys(cfg) {
		v, err := normalizeValue(cfg[k], k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func sortedConfigKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func normalizeValue(v any, path string) (any, error) {
	var f float64
	switch x := v.(type) {
	case nil, bool, string:
		return v, nil
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return nil, fmt.Errorf("env_config key %q: %q is not a number", path, string(x))
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for _, k := range sortedConfigKeys(x) {
			e, err := normalizeValue(x[k], path+"."+k)
			if err != nil {
				return nil, err
			}
			m[k] = e
		}
		return m, nil
	case Config:
		return normalizeValue(map[string]any(x), path)
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("env_config key %q: object keys must be strings, got %T %v", path, k, k)
			}
			m[ks] = e
		}
		return normalizeValue(m, path)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			n, err := normalizeValue(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	case []float64:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = e
		}
		return normalizeValue(l, path)
	case []string:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = e
		}
		return l, nil
	default:
		return nil, fmt.Errorf("env_config key %q: %T values are not supported (use numbers, strings, booleans, lists and objects)", path, v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("env_config key %q: %v is not a finite number", path, f)
	}
	return f, nil
}

// ConfigInt reads key of cfg as an integer: any number with an integral
// value (6, 6.0, json.Number "6") is accepted. It returns def when the key
// is absent, and an error naming the key and the value when it is not an
// integer. Environment creators (and plugins written in Go) use it to read
// a normalized Config.
func ConfigInt(cfg Config, key string, def int) (int, error) {
	v, ok := cfg[key]
	if !ok {
		return def, nil
	}
	n, err := normalizeValue(v, key)
	if err != nil {
		return def, err
	}
	f, isNum := n.(float64)
	if !isNum || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		return def, fmt.Errorf("config key %q must be an integer, got %s", key, describeValue(v))
	}
	return int(f), nil
}

// ConfigFloat reads key of cfg as a finite number, or returns def when the
// key is absent.
func ConfigFloat(cfg Config, key string, def float64) (float64, error) {
	v, ok := cfg[key]
	if !ok {
		return def, nil
	}
	n, err := normalizeValue(v, key)
	f, isNum := n.(float64)
	if err != nil || !isNum {
		return def, fmt.Errorf("config key %q must be a finite number, got %s", key, describeValue(v))
	}
	return f, nil
}

// describeValue shows a config value the way the user wrote it: strings
// quoted, so that "6" and 6 read differently.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case nil:
		return "null"
	case map[string]any, Config:
		return "an object"
	case []any:
		return "a list"
	}
	s := fmt.Sprint(v)
	if strings.ContainsAny(s, " \n") {
		return fmt.Sprintf("%T", v)
	}
	return s
}
