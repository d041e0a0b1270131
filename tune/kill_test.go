package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const killChildEnv = "GRAY_TUNE_KILL_CHILD_DIR"

// killExperiment is the sweep both the killed child and the resuming
// parent run: ASHA over a grid, with checkpoints every 2 iterations.
func killExperiment(t *testing.T, dir string) Experiment {
	asha, err := NewASHA(ASHAConfig{MaxT: 16, GracePeriod: 2, ReductionFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	slow := FuncTrainable(func(ctx context.Context, cfg map[string]any, report ReportFunc) error {
		q, _ := Float(cfg, "quality")
		var st counterState
		if _, err := LoadState(ctx, &st); err != nil {
			return err
		}
		for {
			st.Step++
			time.Sleep(3 * time.Millisecond)
			SaveState(ctx, st)
			if err := report(map[string]any{"score": q * float64(st.Step), "step": st.Step}); err != nil {
				return nil
			}
		}
	})
	return Experiment{
		Dir: dir, Trainable: slow, Metric: "score", Scheduler: asha,
		Space:          map[string]any{"quality": Grid(3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0), "lr": LogUniform{1e-4, 1e-1}},
		NumSamples:     2,
		Seed:           11,
		CheckpointFreq: 2, NodeResources: Resources{CPU: 3},
	}
}

// TestKillChild is the child half of TestSIGKILLThenResume; it only runs
// when re-executed with killChildEnv set.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestSIGKILLThenResume")
	}
	Run(context.Background(), killExperiment(t, dir))
}

func TestSIGKILLThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := filepath.Join(t.TempDir(), "exp")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it in the middle: once the journal holds some results.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, journalFile))
		if bytes.Count(b, []byte(`"e":"result"`)) >= 40 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("child made no progress: %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before, err := LoadTrials(dir)
	if err != nil {
		t.Fatal(err)
	}
	unfinished := 0
	for _, s := range before {
		if !s.Status.terminal() {
			unfinished++
		}
	}
	if unfinished == 0 {
		t.Fatalf("the child finished before being killed; nothing to resume (%d trials)", len(before))
	}
	// Every result in the journal is also in the trial's result.json.
	logged := map[string]int{}
	// What each unfinished trial logged up to its last checkpoint must be
	// kept as it is; what it logged after is re-computed on resume.
	kept := map[string][]map[string]any{}
	for _, s := range before {
		rs := readResultsMaybe(t, s.Dir)
		logged[s.ID] = len(rs)
		if s.Status.terminal() {
			kept[s.ID] = rs
			continue
		}
		k := 0
		if n := len(s.Checkpoints); n > 0 {
			k = s.Checkpoints[n-1].Iteration
		}
		for _, r := range rs {
			if int(r["training_iteration"].(float64)) <= k {
				kept[s.ID] = append(kept[s.ID], r)
			}
		}
	}

	a, err := Resume(context.Background(), killExperiment(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Trials) != 16 {
		t.Fatalf("%d trials after resume, want all 16", len(a.Trials))
	}
	for _, tr := range a.Trials {
		if tr.Status != Terminated {
			t.Errorf("trial %s %s after resume", tr.ID, tr.Status)
		}
		if s, _ := tr.Metric("step"); int(s) != tr.Iteration {
			t.Errorf("trial %s at iteration %d reports step %v: not continued from its checkpoint", tr.ID, tr.Iteration, s)
		}
		rs := readResultsMaybe(t, tr.Dir)
		if len(rs) < logged[tr.ID] {
			t.Errorf("trial %s has %d results after resume, had %d before: results lost", tr.ID, len(rs), logged[tr.ID])
		}
		// Every iteration exactly once, in order, up to the last.
		if len(rs) != tr.Iteration {
			t.Errorf("trial %s: result.json has %d results for %d iterations", tr.ID, len(rs), tr.Iteration)
		}
		for i, r := range rs {
			if it := int(r["training_iteration"].(float64)); it != i+1 {
				t.Errorf("trial %s: result.json line %d is iteration %d, want %d (duplicated or missing iterations)", tr.ID, i+1, it, i+1)
				break
			}
		}
		for i, r := range kept[tr.ID] {
			if i >= len(rs) || show(rs[i]) != show(r) {
				t.Errorf("trial %s: result %d logged before the kill was changed or lost by resuming", tr.ID, i+1)
				break
			}
		}
	}
	// The configs are those the child's searcher drew (same seed, replayed).
	for i, s := range before {
		if show(s.Config) != show(jsonRound(a.Trials[i].Config)) {
			t.Fatalf("trial %s config %s changed to %s", s.ID, show(s.Config), show(a.Trials[i].Config))
		}
	}
	best, err := BestTrial(dir, "score", Max)
	if err != nil || best.Config["quality"].(float64) != 9 {
		t.Fatalf("best after resume: %+v %v", best, err)
	}
	tab, err := ListTrials(dir, ListOptions{Sort: "-score", Filter: []string{"status=TERMINATED", "config.quality>=5"}})
	if err != nil {
		t.Fatal(err)
	}
	qcol := -1
	for i, c := range tab.Columns {
		if c == "config.quality" {
			qcol = i
		}
	}
	if qcol < 0 || len(tab.Rows) != 6 || tab.Rows[0][qcol] != "9" || tab.Rows[5][qcol] != "5" {
		var b strings.Builder
		tab.Write(&b)
		t.Fatalf("ls: want 6 rows (quality 5, 6, 9 twice each), best first:\n%s", b.String())
	}
}

func jsonRound(v any) any {
	var out any
	b := []byte(show(v))
	_ = jsonUnmarshal(b, &out)
	return out
}

func readResultsMaybe(t *testing.T, dir string) []map[string]any {
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		return nil
	}
	return readResults(t, dir)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
