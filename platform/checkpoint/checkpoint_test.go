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
