package tunelog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/tune"
)

func TestTrialFolderLayoutAndReopen(t *testing.T) {
	var f tune.LoggerFactory = Factory(Options{})
	dir := filepath.Join(t.TempDir(), "sweep", "trial_00003")
	params := map[string]any{"lr": 0.001}
	lg, err := f(dir, params)
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Log(map[string]any{"training_iteration": 1, "timesteps_total": 100, "time_this_iter_s": 0.5,
		"learner": map[string]any{"kl": 0.01}, "extra": map[string]any{"eval": 3.0}}); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	// The trial restarts (a retry, or --resume): its folder is appended to.
	lg, err = f(dir, params)
	if err != nil {
		t.Fatal(err)
	}
	lg.Log(map[string]any{"training_iteration": 2, "timesteps_total": 200, "time_this_iter_s": 0.5})
	lg.Close()

	for _, name := range []string{"params.json", "config.json", "result.json", "progress.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	events, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(events) == 0 {
		t.Error("no event file")
	}
	results, err := runlog.ReadResults(dir)
	if err != nil || len(results) != 2 {
		t.Fatalf("%d results, %v", len(results), err)
	}
	flat := runlog.Flatten(results[0])
	if flat["info/learner/kl"] == nil || flat["eval"] == nil || flat["learner/kl"] != nil {
		t.Errorf("agent result not laid out as train lays it out: %v", flat)
	}
	if tt, _ := runlog.Numeric(results[1]["time_total_s"]); tt != 1 {
		t.Errorf("time_total_s after reopening = %v, want 1", results[1]["time_total_s"])
	}
}
