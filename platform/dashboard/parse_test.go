package dashboard

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/gray-ml/gray/platform/runlog"
)

// referenceParse is what parseResult must agree with: encoding/json into
// a map, numbers kept under flattened keys.
func referenceParse(line []byte) (map[string]float64, bool, bool) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return nil, false, false
	}
	out := map[string]float64{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch x := v.(type) {
			case float64:
				out[prefix+k] = x
			case map[string]any:
				walk(prefix+k+runlog.Sep, x)
			}
		}
	}
	walk("", m)
	done, _ := m["done"].(bool)
	return out, done, true
}

func TestParseResultAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"training_iteration": 3, "episode_reward_mean": 21.5, "done": true, "info": {"learner": {"kl": 1e-3, "entropy": -0.5}}}`,
		`{"a": [1, 2, {"b": 3}], "s": "x\"y\\u0041", "n": null, "t": true, "f": false, "e": {}, "neg": -1.25E+2}`,
		`{"k\u00e9y": 1, "<img src=x onerror=alert(1)>": 2, "nested": {"deeper": {"x": 0}}, "done": false}`,
		`  {"x": 1}  `,
		`{}`,
		`{"done": "yes", "x": 0.000001}`,
	}
	bad := []string{
		`{"x": 1`, `{"x": }`, `{"x" 1}`, `[1, 2]`, `not json`, `{"x": 1} trailing`, `{"x": 1,}`, `{"x": tru}`,
		`{"x": "unterminated}`, `{"x": 1e}`, `{"x": --1}`, `{"training_iteration": 4, "episode_rew`, "{\"x\": \"a\x01b\"}", ``,
	}
	for _, l := range lines {
		flat, done, ok := parseResult([]byte(l))
		wflat, wdone, wok := referenceParse([]byte(l))
		if ok != wok || done != wdone || !reflect.DeepEqual(flat, wflat) {
			t.Errorf("%s:\n got %v %v %v\nwant %v %v %v", l, flat, done, ok, wflat, wdone, wok)
		}
	}
	for _, l := range bad {
		if _, _, ok := parseResult([]byte(l)); ok {
			t.Errorf("%q parsed as a result", l)
		}
	}
	// A result as the runner writes it.
	res := map[string]any{"training_iteration": 7, "timesteps_total": 3584, "episode_reward_mean": 31.25,
		"info": map[string]any{"learner": map[string]any{"policy_loss": -0.0123, "kl": 0.004}}, "hostname": "h", "done": false, "config": []any{1, "a"}}
	b, _ := json.Marshal(res)
	flat, _, ok := parseResult(b)
	if !ok || flat["info/learner/kl"] != 0.004 || flat["timesteps_total"] != 3584 || len(flat) != 5 || math.IsNaN(flat["episode_reward_mean"]) {
		t.Errorf("runner result parsed as %v", flat)
	}
}

func BenchmarkParseResult(b *testing.B) {
	line := []byte(`{"training_iteration":17,"timesteps_total":17000,"episode_reward_mean":41.5,"episode_reward_min":9,"episode_reward_max":200,"episode_len_mean":41.5,"episodes_this_iter":24,"time_this_iter_s":0.41,"time_total_s":7.1,"done":false,"date":"2026-11-25_12-00-00","timestamp":1764000000,"hostname":"vm","pid":1234,"experiment_id":"abc123","info":{"learner":{"policy_loss":-0.01,"vf_loss":3.2,"total_loss":3.1,"entropy":0.61,"kl":0.004,"kl_coeff":0.2,"cur_lr":0.0003,"explained_variance":0.4}}}`)
	b.Run("scanner", func(b *testing.B) {
		for b.Loop() {
			parseResult(line)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			referenceParse(line)
		}
	})
}

// Python's json, and so Ray Tune's result.json, writes non-finite floats
// as NaN, Infinity and -Infinity (RLlib's episode_reward_mean is NaN until
// an episode ends). Such a line is a result: its other numbers are kept,
// the words chart as gaps and go to the CSV as written.
func TestParseResultTakesPythonsNonFiniteWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want map[string]float64
		strs map[string]string
	}{
		{`{"training_iteration": 1, "episode_reward_mean": NaN, "done": false}`,
			map[string]float64{"training_iteration": 1}, map[string]string{"episode_reward_mean": "NaN", "done": "false"}},
		{`{"a": Infinity, "b": -Infinity, "c": {"d": NaN, "e": 2}, "l": [NaN, 1]}`,
			map[string]float64{"c/e": 2}, map[string]string{"a": "Infinity", "b": "-Infinity", "c/d": "NaN"}},
	} {
		flat, _, ok := parseResult([]byte(tc.line))
		if !ok || !reflect.DeepEqual(flat, tc.want) {
			t.Errorf("%s: parsed %v (ok %v), want %v", tc.line, flat, ok, tc.want)
		}
		_, strs, ok := parseResultAll([]byte(tc.line))
		if !ok || !reflect.DeepEqual(strs, tc.strs) {
			t.Errorf("%s: texts %v (ok %v), want %v", tc.line, strs, ok, tc.strs)
		}
	}
	for _, l := range []string{`{"x": nan}`, `{"x": NaNa}`, `{"x": -Inf}`, `{"x": +Infinity}`, `{"x": Infinit}`, `{"x": -}`} {
		if _, _, ok := parseResult([]byte(l)); ok {
			t.Errorf("%q parsed as a result", l)
		}
	}
}
