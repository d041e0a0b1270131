package rllib

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type testMeta struct {
	CheckpointHeader
	Note string `json:"note"`
}

type testState struct {
	Weights []float64
	Steps   int64
}

func TestCheckpointRoundTrip(t *testing.T) {
	h := CheckpointHeader{Algorithm: "TEST", Env: "CartPole-v1", Format: 2, Iteration: 7, TimestepsTotal: 900}
	dir, err := SaveCheckpoint(t.TempDir(), testMeta{h, "hello"}, testState{[]float64{1, 2.5}, 900})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != "checkpoint_7" {
		t.Errorf("folder %q, want .../checkpoint_7", dir)
	}
	// The header's keys sit at the top level of meta.json beside the
	// algorithm's own.
	raw, err := os.ReadFile(filepath.Join(dir, CheckpointMetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"algorithm", "env", "format", "training_iteration", "timesteps_total", "note"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("meta.json lacks %q: %s", k, raw)
		}
	}
	var st testState
	if err := LoadCheckpoint(dir, CheckpointHeader{Algorithm: "TEST", Env: "CartPole-v1", Format: 2}, &st); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Weights, []float64{1, 2.5}) || st.Steps != 900 {
		t.Errorf("loaded %+v", st)
	}
	// Saving the same iteration again replaces the folder.
	if _, err := SaveCheckpoint(filepath.Dir(dir), testMeta{h, "again"}, testState{Steps: 1}); err != nil {
		t.Fatal(err)
	}
	if err := LoadCheckpoint(dir, h, &st); err != nil || st.Steps != 1 {
		t.Errorf("after a second save: %v, steps %d", err, st.Steps)
	}
}

func TestCheckpointErrors(t *testing.T) {
	h := CheckpointHeader{Algorithm: "TEST", Env: "CartPole-v1", Format: 2}
	if _, err := SaveCheckpoint("", testMeta{CheckpointHeader: h}, testState{}); err == nil || !strings.Contains(err.Error(), "TEST: Save: the agent has no run folder") {
		t.Errorf("saving without a run folder: %v", err)
	}
	dir, err := SaveCheckpoint(t.TempDir(), testMeta{CheckpointHeader: h}, testState{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want CheckpointHeader
		msg  string
	}{
		{"not a checkpoint", t.TempDir(), h, "is not a checkpoint folder"},
		{"other algorithm", dir, CheckpointHeader{Algorithm: "PPO", Env: h.Env, Format: 2}, `is a checkpoint of algorithm "TEST", not PPO`},
		{"other environment", dir, CheckpointHeader{Algorithm: "TEST", Env: "Acrobot-v1", Format: 2}, `for environment "CartPole-v1", this agent runs "Acrobot-v1"`},
		{"other format", dir, CheckpointHeader{Algorithm: "TEST", Env: h.Env, Format: 3}, "has checkpoint format 2, this version reads 3"},
	}
	for _, tt := range tests {
		st := testState{Steps: 42}
		err := LoadCheckpoint(tt.path, tt.want, &st)
		if err == nil || !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), tt.want.Algorithm+": Restore: ") {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.msg)
		}
		if st.Steps != 42 {
			t.Errorf("%s: the state was changed", tt.name)
		}
	}
}
