package envs

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeConfig(t *testing.T) {
	in := Config{
		"i": 6, "i64": int64(-3), "u64": uint64(7), "f32": float32(0.5), "num": json.Number("50"),
		"s": "6", "b": true, "null": nil,
		"list":   []any{1, json.Number("2.5"), "x"},
		"nested": map[string]any{"k": uint8(4), "deeper": map[any]any{"j": int32(9)}},
	}
	got, err := NormalizeConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		"i": 6.0, "i64": -3.0, "u64": 7.0, "f32": 0.5, "num": 50.0,
		"s": "6", "b": true, "null": nil,
		"list":   []any{1.0, 2.5, "x"},
		"nested": map[string]any{"k": 4.0, "deeper": map[string]any{"j": 9.0}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NormalizeConfig:\n got %#v\nwant %#v", got, want)
	}
	if _, ok := in["num"].(json.Number); !ok {
		t.Error("NormalizeConfig changed its input")
	}
	// The same value arrives as the same type however it was decoded.
	for _, v := range []any{6, int64(6), uint64(6), json.Number("6"), 6.0} {
		n, err := NormalizeConfig(Config{"size": v})
		if err != nil || n["size"] != 6.0 {
			t.Errorf("%T %v normalized to %#v (%v), want float64 6", v, v, n["size"], err)
		}
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{"x": math.NaN()}, `"x": NaN is not a finite number`},
		{Config{"x": map[string]any{"y": math.Inf(1)}}, `"x.y": +Inf`},
		{Config{"x": json.Number("abc")}, `"x": "abc" is not a number`},
		{Config{"x": struct{}{}}, `struct {} values are not supported`},
		{Config{"x": map[any]any{1: 2}}, "object keys must be strings"},
	} {
		if _, err := NormalizeConfig(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NormalizeConfig(%v) = %v, want an error with %q", c.cfg, err, c.want)
		}
	}
}

func TestConfigInt(t *testing.T) {
	for _, c := range []struct {
		v       any
		want    int
		wantErr string
	}{
		{6.0, 6, ""}, {json.Number("6"), 6, ""}, {uint64(6), 6, ""},
		{6.5, 0, `"size" must be an integer, got 6.5`},
		{"6", 0, `"size" must be an integer, got "6"`},
		{true, 0, "must be an integer, got true"},
	} {
		got, err := ConfigInt(Config{"size": c.v}, "size", 0)
		if c.wantErr == "" && (err != nil || got != c.want) || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("ConfigInt(%T %v) = %d, %v; want %d, %q", c.v, c.v, got, err, c.want, c.wantErr)
		}
	}
	if got, err := ConfigInt(nil, "size", 5); got != 5 || err != nil {
		t.Errorf("absent key: %d, %v", got, err)
	}
}

// TestBuiltinsTakeEveryNumberType: a built-in environment accepts an
// integer key however the number was decoded (JSON on the command line,
// YAML, CBOR in a worker process).
func TestBuiltinsTakeEveryNumberType(t *testing.T) {
	for _, v := range []any{json.Number("50"), uint64(50), 50, int64(50), 50.0} {
		vec, err := MakeVector("CartPole-v1", Config{"max_episode_steps": v}, 1)
		if err != nil {
			t.Errorf("max_episode_steps as %T: %v", v, err)
			continue
		}
		vec.Close()
	}
}
