package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray/internal/numeric"
)

// Sep joins the keys of nested results into one flat key, as in
// info/learner/policy_loss: the column name in progress.csv, the tag in the
// event file and the key stop criteria name.
const Sep = "/"

// IsBookkeeping reports whether k is a key the logger adds to every result
// (or nests results under), which an agent's own results must not hide.
func IsBookkeeping(k string) bool {
	switch k {
	case "date", "timestamp", "hostname", "pid", "time_total_s", "done", "experiment_id", "info", "extra":
		return true
	}
	return false
}

// Flatten maps a nested result onto flat keys joined by Sep. Lists and
// other non-map values are kept whole.
func Flatten(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	flattenInto(out, "", m)
	return out
}

func flattenInto(out map[string]any, prefix string, m map[string]any) {
	for k, v := range m {
		key := prefix + k
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flattenInto(out, key+Sep, sub)
			continue
		}
		out[key] = v
	}
}

// Numeric returns v as a float64 when it is a number (of any Go numeric
// type or a json.Number).
func Numeric(v any) (float64, bool) { return numeric.Float(v) }

// normalize turns a result value into plain JSON-shaped values
// (map[string]any, []any, float64/int64, bool, string, nil) so that the
// writers see one set of types. Non-finite floats stay floats here; the
// JSON writer turns them into null.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64, int64:
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return int64(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	if f, ok := Numeric(v); ok {
		switch v.(type) {
		case float32, json.Number:
			return f
		}
		return int64(f)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			out := make(map[string]any, rv.Len())
			for it := rv.MapRange(); it.Next(); {
				out[it.Key().String()] = normalize(it.Value().Interface())
			}
			return out
		}
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	case reflect.Struct:
		// Config structs and the like: their JSON form is what users read.
		if b, err := json.Marshal(v); err == nil {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var out any
			if d.Decode(&out) == nil {
				return normalize(out)
			}
		}
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	}
	// Anything else is kept as it prints: a result must never be lost
	// because one value has an odd type.
	return fmt.Sprint(v)
}

// jsonSafe replaces non-finite floats by nil, since JSON has no NaN or
// infinity; progress.csv and the event file keep them.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	}
	return v
}

// cell renders one flat value for progress.csv.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		case math.Abs(x) >= 1e6 && math.Abs(x) < 1e21:
			// Large values in full: a timestamp reads 1795847230.25, not
			// 1.79584723025e+09.
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, err := json.Marshal(jsonSafe(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// standardOrder is the column order of the keys every agent reports; other
// keys follow, sorted.
var standardOrder = []string{
	"training_iteration", "timesteps_total", "timesteps_this_iter",
	"episode_reward_mean", "episode_reward_min", "episode_reward_max", "episode_len_mean",
	"episodes_this_iter", "episodes_total", "time_this_iter_s", "time_total_s",
	"done", "date", "timestamp", "hostname", "pid", "experiment_id",
}

// orderColumns returns keys with the standard ones first.
func orderColumns(keys []string) []string {
	rank := make(map[string]int, len(standardOrder))
	for i, k := range standardOrder {
		rank[k] = i
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, iok := rank[keys[i]]
		rj, jok := rank[keys[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		// info/... after top-level keys keeps the table readable.
		ni, nj := strings.Count(keys[i], Sep), strings.Count(keys[j], Sep)
		if ni != nj {
			return ni < nj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// NumericKeys lists the keys of a flat result that hold numbers, sorted:
// what stop criteria and plots can name.
func NumericKeys(flat map[string]any) []string {
	var keys []string
	for k, v := range flat {
		if _, ok := Numeric(v); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
