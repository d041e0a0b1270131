package runlog

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gray-ml/gray/platform/tensorboard"
)

// A run restored from a checkpoint at iteration k drops what it logged
// after k (and a torn last line), keeps everything up to k, and continues
// counting from k: re-computed iterations appear once.
func TestTruncateAfterDropsResultsPastTheCheckpoint(t *testing.T) {
	r := newRun(t)
	for i := 1; i <= 5; i++ {
		r.Log(result(i, float64(10*i)))
	}
	r.Close()
	f, _ := os.OpenFile(filepath.Join(r.Dir(), ResultFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"training_iteration": 6, "episo`)
	f.Close()
	before, _ := ReadResults(r.Dir())

	r2, err := Resume(r.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.TruncateAfter(3); err != nil {
		t.Fatal(err)
	}
	res, err := r2.Log(map[string]any{"time_this_iter_s": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if res["training_iteration"] != int64(4) {
		t.Errorf("first result after truncating to 3 is iteration %v, want 4", res["training_iteration"])
	}
	after, err := ReadResults(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 4 {
		t.Fatalf("result.json has %d results, want iterations 1-3 kept and 4 re-logged", len(after))
	}
	for i := 0; i < 3; i++ {
		if fmt.Sprint(after[i]["timestamp"], after[i]["episode_reward_mean"]) != fmt.Sprint(before[i]["timestamp"], before[i]["episode_reward_mean"]) {
			t.Errorf("result %d changed by truncation: %v -> %v", i+1, before[i], after[i])
		}
	}
	cf, _ := os.Open(filepath.Join(r.Dir(), ProgressFile))
	defer cf.Close()
	rows, err := csv.NewReader(cf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range rows[0] {
		if c == "training_iteration" {
			col = i
		}
	}
	var its []string
	for _, row := range rows[1:] {
		its = append(its, row[col])
	}
	if len(its) != 4 || its[0] != "1" || its[2] != "3" || its[3] != "4" {
		t.Errorf("progress.csv iterations %v, want [1 2 3 4]", its)
	}
}

// TestResumeKeepsOneEventFile: resuming (twice) and truncating to a
// checkpoint writes on in the same event file, each step once.
func TestResumeKeepsOneEventFile(t *testing.T) {
	r := newRun(t)
	for i := 1; i <= 5; i++ {
		r.Log(result(i, float64(10*i)))
	}
	r.Close()
	for _, k := range []int{3, 4} {
		r2, err := Resume(r.Dir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r2.TruncateAfter(k); err != nil {
			t.Fatal(err)
		}
		for i := k + 1; i <= 5; i++ {
			if _, err := r2.Log(map[string]any{"time_this_iter_s": 1.0}); err != nil {
				t.Fatal(err)
			}
		}
		r2.Close()
	}
	files, _ := filepath.Glob(filepath.Join(r.Dir(), "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("event files %v, want one", files)
	}
	events, err := tensorboard.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var iters []float32
	for _, ev := range events {
		if ev.FileVersion == "" {
			iters = append(iters, ev.Scalars["training_iteration"])
		}
	}
	if fmt.Sprint(iters) != "[1 2 3 4 5]" {
		t.Errorf("iterations in the event file %v, want [1 2 3 4 5]", iters)
	}
}
