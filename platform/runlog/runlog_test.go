package runlog

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/platform/tensorboard"
)

type testConfig struct {
	LR    float64 `json:"lr"`
	Model struct {
		Hiddens []int `json:"fcnet_hiddens"`
	} `json:"model"`
}

func newRun(t *testing.T) *Run {
	t.Helper()
	cfg := testConfig{LR: 5e-5}
	cfg.Model.Hiddens = []int{64, 64}
	r, err := Create(Options{LocalDir: t.TempDir(), Experiment: "exp", Alg: "PPO", Env: "CartPole-v1",
		Config: cfg, Info: map[string]any{"seed": 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// result is an iteration's result as runner.ResultMap nests it.
func result(iter int, reward float64) map[string]any {
	return map[string]any{"training_iteration": iter, "timesteps_total": int64(4000 * iter), "timesteps_this_iter": int64(4000),
		"episode_reward_mean": reward, "episode_reward_min": 9.0, "episode_reward_max": 200.0, "episode_len_mean": reward,
		"episodes_total": int64(0), "episodes_this_iter": 10, "time_this_iter_s": 1.5,
		"info": map[string]any{"learner": map[string]any{"policy_loss": -0.01, "vf_loss": 3.0, "kl": 0.02}}}
}

func TestRunFolderLayoutAndConfig(t *testing.T) {
	r := newRun(t)
	if !regexp.MustCompile(`/exp/PPO_CartPole-v1_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_[0-9a-f]{6}$`).MatchString(r.Dir()) {
		t.Errorf("run folder %s does not follow <local-dir>/<experiment>/<ALG>_<ENV>_<date>_<id>", r.Dir())
	}
	b, err := os.ReadFile(filepath.Join(r.Dir(), ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"lr": 0.00005`) || !strings.Contains(string(b), `"fcnet_hiddens": [`) {
		t.Errorf("config.json = %s, want every config key", b)
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), ParamsFile)); !os.IsNotExist(err) {
		t.Errorf("params.json written without Params: %v", err)
	}
}

func TestLogWritesResultJSONCSVAndEvents(t *testing.T) {
	r := newRun(t)
	for i := 1; i <= 3; i++ {
		res := result(i, float64(20*i))
		if i == 3 {
			res["done"] = true
		}
		if _, err := r.Log(res); err != nil {
			t.Fatal(err)
		}
	}
	// Results are on disk before Close.
	results, err := ReadResults(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results in result.json, want 3", len(results))
	}
	last := results[2]
	for _, k := range []string{"training_iteration", "timesteps_total", "timesteps_this_iter", "episode_reward_mean",
		"episode_reward_min", "episode_reward_max", "episode_len_mean", "episodes_this_iter", "time_this_iter_s",
		"time_total_s", "date", "hostname", "pid", "done", "info"} {
		if _, ok := last[k]; !ok {
			t.Errorf("result.json lacks %q: %v", k, last)
		}
	}
	if tt, _ := Numeric(last["time_total_s"]); math.Abs(tt-4.5) > 1e-9 {
		t.Errorf("time_total_s = %v, want 4.5 (sum of time_this_iter_s)", last["time_total_s"])
	}
	if last["done"] != true || results[0]["done"] != false {
		t.Errorf("done = %v, %v; want false then true", results[0]["done"], last["done"])
	}
	if kl := last["info"].(map[string]any)["learner"].(map[string]any)["kl"]; kl == nil {
		t.Errorf("learner stats not under info/learner: %v", last["info"])
	}

	f, err := os.Open(filepath.Join(r.Dir(), ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("progress.csv has %d rows, want header + 3", len(rows))
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	if rows[0][0] != "training_iteration" {
		t.Errorf("first column %q, want training_iteration", rows[0][0])
	}
	for _, k := range []string{"episode_reward_mean", "info/learner/policy_loss", "time_total_s", "hostname"} {
		if _, ok := col[k]; !ok {
			t.Errorf("progress.csv lacks column %q: %v", k, rows[0])
		}
	}
	if got := rows[2][col["episode_reward_mean"]]; got != "40" {
		t.Errorf("row 2 episode_reward_mean = %q, want 40", got)
	}

	matches, _ := filepath.Glob(filepath.Join(r.Dir(), "events.out.tfevents.*"))
	if len(matches) != 1 {
		t.Fatalf("event files: %v, want one", matches)
	}
	events, err := tensorboard.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || events[3].Step != 12000 || events[3].Scalars["episode_reward_mean"] != 60 ||
		events[3].Scalars["info/learner/vf_loss"] != 3 {
		t.Errorf("events = %+v; want version + 3 scalar events at step timesteps_total", events)
	}
	if _, ok := events[1].Scalars["hostname"]; ok {
		t.Error("a string result became a scalar")
	}
}

func TestNewKeysWidenCSVAndNaNIsKept(t *testing.T) {
	r := newRun(t)
	r.Log(map[string]any{"a": 1, "time_this_iter_s": 0.5})
	r.Log(map[string]any{"a": 2, "b": math.NaN(), "nested": map[string]any{"c": 3}})
	r.Log(map[string]any{"b": 4})
	f, _ := os.Open(filepath.Join(r.Dir(), ProgressFile))
	rows, err := csv.NewReader(f).ReadAll() // fails on ragged rows
	f.Close()
	if err != nil {
		t.Fatalf("progress.csv is not a valid CSV after new keys: %v", err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, c := range []struct {
		row  int
		key  string
		want string
	}{{1, "a", "1"}, {1, "b", ""}, {2, "b", "NaN"}, {2, "nested/c", "3"}, {3, "a", ""}, {3, "b", "4"}, {3, "training_iteration", "3"}} {
		i, ok := col[c.key]
		if !ok {
			t.Errorf("no column %q in %v", c.key, rows[0])
			continue
		}
		if rows[c.row][i] != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.key, rows[c.row][i], c.want)
		}
	}
	results, _ := ReadResults(r.Dir())
	if v, ok := results[1]["b"]; !ok || v != nil {
		t.Errorf("NaN in result.json = %v (present %v), want null", v, ok)
	}
}

func TestTruncatedLastLineIsIgnoredAndResumeContinues(t *testing.T) {
	r := newRun(t)
	r.Log(result(1, 10))
	r.Log(result(2, 20))
	r.Close()
	// A writer killed mid-line leaves a partial last line.
	f, _ := os.OpenFile(filepath.Join(r.Dir(), ResultFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"training_iteration": 3, "episo`)
	f.Close()
	results, err := ReadResults(r.Dir())
	if err != nil || len(results) != 2 {
		t.Fatalf("ReadResults = %d results, %v; want the 2 whole ones", len(results), err)
	}
	// Repair as a resumer would: drop the partial line.
	b, _ := os.ReadFile(filepath.Join(r.Dir(), ResultFile))
	os.WriteFile(filepath.Join(r.Dir(), ResultFile), b[:strings.LastIndexByte(string(b), '\n')+1], 0o644)

	r2, err := Resume(r.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	res, err := r2.Log(map[string]any{"time_this_iter_s": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	if res["training_iteration"] != int64(3) || res["time_total_s"] != 4.0 {
		t.Errorf("resumed result = iteration %v, time_total_s %v; want 3 and 4", res["training_iteration"], res["time_total_s"])
	}
	if res["experiment_id"] != r.ID() {
		t.Errorf("experiment_id %v, want the run's id %s", res["experiment_id"], r.ID())
	}
}

func TestUnwritableLocalDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o644)
	_, err := Create(Options{LocalDir: filepath.Join(file, "results"), Alg: "PPO", Env: "CartPole-v1"})
	if err == nil || !strings.Contains(err.Error(), "not-a-dir") || !strings.Contains(err.Error(), "writable") {
		t.Errorf("Create under a file: %v; want an error naming the folder and what to do", err)
	}
}

func TestTuneTrialFolder(t *testing.T) {
	r, err := Create(Options{LocalDir: t.TempDir(), Experiment: "sweep", Alg: "PPO", Env: "plugin:./bin/grid",
		Tag: "3_lr=0.001", Config: map[string]any{"lr": 0.001}, Params: map[string]any{"lr": 0.001}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Named after the plugin, not after its path.
	if !strings.HasPrefix(filepath.Base(r.Dir()), "PPO_grid_3_lr=0.001_") {
		t.Errorf("trial folder %s", r.Dir())
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), ParamsFile)); err != nil {
		t.Errorf("params.json: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"CartPole-v1": "CartPole-v1", "plugin:./bin/gridworld": "gridworld", "plugin:/x/y/catch.py": "catch",
		"plugin:catch": "catch", "a/b:c": "a_b_c", "": "none",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkLog(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "fsync"
		}
		b.Run(name, func(b *testing.B) {
			r, err := Create(Options{LocalDir: b.TempDir(), Alg: "PPO", Env: "CartPole-v1", NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			res := result(1, 20)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Log(res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The timestamp has sub-second resolution: a fast run's results would
// otherwise share whole seconds and stack on a wall-time axis.
func TestTimestampHasSubsecondResolution(t *testing.T) {
	r := newRun(t)
	before := float64(time.Now().UnixMicro()) / 1e6
	if _, err := r.Log(result(1, 1)); err != nil {
		t.Fatal(err)
	}
	after := float64(time.Now().UnixMicro()) / 1e6
	results, err := ReadResults(r.Dir())
	if err != nil || len(results) != 1 {
		t.Fatalf("results: %v %v", results, err)
	}
	ts, ok := Numeric(results[0]["timestamp"])
	if !ok || ts < before || ts > after {
		t.Errorf("timestamp %v, want between %f and %f", results[0]["timestamp"], before, after)
	}
}

func TestCSVCellsKeepLargeNumbersInFull(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{1795847230.25, "1795847230.25"}, {float64(2e6), "2000000"}, {0.5, "0.5"}, {1e-7, "1e-07"}, {1e22, "1e+22"}, {int64(7), "7"},
	} {
		if got := cell(c.v); got != c.want {
			t.Errorf("cell(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
