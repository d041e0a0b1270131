package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReadFolderAndFile(t *testing.T) {
	run := t.TempDir()
	dir := Dir(run, 7)
	if filepath.Base(dir) != "checkpoint_7" {
		t.Errorf("Dir = %s", dir)
	}
	os.Mkdir(dir, 0o755)
	file := filepath.Join(run, "single.ckpt")
	os.WriteFile(file, []byte("w"), 0o644)
	for _, c := range []struct{ saved, given string }{
		{dir, dir}, {file, file}, {dir, filepath.Join(dir, MetaFile)},
	} {
		m := Meta{Algorithm: "PPO", Env: "CartPole-v1", Iteration: 7, Config: map[string]any{"lr": 0.001}}
		if _, err := Write(c.saved, m); err != nil {
			t.Fatal(err)
		}
		got, agent, err := Read(c.given)
		if err != nil {
			t.Fatal(err)
		}
		if agent != c.saved || got.Iteration != 7 || got.Algorithm != "PPO" || got.Config["lr"] != json.Number("0.001") {
			t.Errorf("Read(%s) = %+v, %s", c.given, got, agent)
		}
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged")
	os.Mkdir(damaged, 0o755)
	os.WriteFile(filepath.Join(damaged, MetaFile), []byte("{"), 0o644)
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "does not exist"},
		{dir, "is not a Gray checkpoint"},
		{damaged, "damaged"},
	} {
		if _, _, err := Read(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%s) = %v, want %q", c.path, err, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	m := Meta{Algorithm: "PPO", Env: "CartPole-v1"}
	for _, c := range []struct {
		alg, env, want string
	}{
		{"PPO", "CartPole-v1", ""},
		{"ppo", "CartPole", ""},
		{"", "", ""},
		{"DQN", "CartPole-v1", "written by algorithm PPO, not DQN"},
		{"PPO", "Pendulum-v1", "trained on environment CartPole-v1, not Pendulum-v1"},
		{"PPO", "CartPole-v0", "not CartPole-v0"},
	} {
		err := m.Check(c.alg, c.env)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%q, %q) = %v, want %q", c.alg, c.env, err, c.want)
		}
	}
}

// TestChecksumCatchesAFlippedBit: a checkpoint whose weights changed on
// disk after saving does not load.
func TestChecksumCatchesAFlippedBit(t *testing.T) {
	for _, asFile := range []bool{false, true} {
		run := t.TempDir()
		agentPath := Dir(run, 3)
		state := filepath.Join(agentPath, "nested", "state.cbor")
		if asFile {
			agentPath = filepath.Join(run, "single.ckpt")
			state = agentPath
		}
		os.MkdirAll(filepath.Dir(state), 0o755)
		os.WriteFile(state, []byte{1, 2, 3, 4}, 0o644)
		if _, err := Write(agentPath, Meta{Algorithm: "PPO", Env: "CartPole-v1"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(agentPath); err != nil {
			t.Fatalf("an intact checkpoint: %v", err)
		}
		os.WriteFile(state, []byte{1, 2, 3, 5}, 0o644)
		_, _, err := Read(agentPath)
		if err == nil || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), state) {
			t.Errorf("Read of a flipped bit (file %v): %v; want an error naming %s", asFile, err, state)
		}
		if asFile {
			continue
		}
		os.Remove(state)
		if _, _, err := Read(agentPath); err == nil || !strings.Contains(err.Error(), "cannot be read") {
			t.Errorf("Read of a missing file (file %v): %v", asFile, err)
		}
	}
}

// TestWriteInSurvivesAMove: a folder made a checkpoint by WriteIn refers to
// the agent's checkpoint inside it relatively, so it can be moved.
func TestWriteInSurvivesAMove(t *testing.T) {
	root := t.TempDir()
	outer := filepath.Join(root, "trial", "checkpoint_000004")
	inner := filepath.Join(outer, "checkpoint_4")
	os.MkdirAll(inner, 0o755)
	os.WriteFile(filepath.Join(inner, "state.cbor"), []byte("w"), 0o644)
	if _, err := WriteIn(outer, inner, Meta{Algorithm: "PPO", Env: "CartPole-v1", Iteration: 4}); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(filepath.Join(root, "trial"), moved); err != nil {
		t.Fatal(err)
	}
	m, agent, err := Read(filepath.Join(moved, "checkpoint_000004"))
	if err != nil || m.Iteration != 4 || agent != filepath.Join(moved, "checkpoint_000004", "checkpoint_4") {
		t.Errorf("Read after a move: %+v, %s, %v", m, agent, err)
	}
}

// TestOneHeader: the platform's keys go into the header the agent wrote
// (rllib.SaveCheckpoint's file of the same name), keeping the agent's own;
// an agent header alone reads as a checkpoint of its folder.
func TestOneHeader(t *testing.T) {
	dir := Dir(t.TempDir(), 3)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "state.cbor"), []byte("w"), 0o644)
	agentHeader := `{"algorithm": "PPO", "env": "CartPole-v1", "format": 1, "training_iteration": 3, "timesteps_total": 1536}`
	os.WriteFile(filepath.Join(dir, MetaFile), []byte(agentHeader), 0o644)
	m, agent, err := Read(dir)
	if err != nil || m.Algorithm != "PPO" || agent != dir {
		t.Fatalf("an agent's header alone: %+v %s %v", m, agent, err)
	}
	if _, err := Write(dir, Meta{Algorithm: "PPO", Env: "CartPole-v1", Iteration: 3, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	var header map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, MetaFile))
	if err := json.Unmarshal(b, &header); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "training_iteration", "seed", "files", "agent_path"} {
		if _, ok := header[k]; !ok {
			t.Errorf("the header lacks %q: %s", k, b)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 1 {
		t.Errorf("header files %v, want one", files)
	}
}

// BenchmarkSave compares saving a 4 MiB agent checkpoint with the
// platform's header (which hashes every file) against writing the state
// file alone, the peer that shows the checksum's share.
func BenchmarkSave(b *testing.B) {
	state := make([]byte, 4<<20)
	for i := range state {
		state[i] = byte(i * 7)
	}
	for _, withHeader := range []bool{false, true} {
		name := "state-only"
		if withHeader {
			name = "state+header"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "checkpoint_1")
			os.MkdirAll(dir, 0o755)
			b.SetBytes(int64(len(state)))
			for b.Loop() {
				if err := os.WriteFile(filepath.Join(dir, "state.cbor"), state, 0o644); err != nil {
					b.Fatal(err)
				}
				if withHeader {
					if _, err := Write(dir, Meta{Algorithm: "PPO", Env: "CartPole-v1"}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
