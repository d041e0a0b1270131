package main

import (
	"image/gif"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A PixelPong agent trained for one tiny iteration: its iteration line
// shows frames per second, and rollout --render writes an animated GIF of
// its game; an environment that cannot render is a clear error.
func TestPixelPongTrainAndRender(t *testing.T) {
	local := t.TempDir()
	cfg := `{"num_envs_per_worker": 2, "train_batch_size": 64, "num_sgd_iter": 1, "sgd_minibatch_size": 32,
		"model": {"crop": [34, 16, 0, 0], "dim": 20, "frame_diff": true, "framestack": 2,
		"conv_filters": [[4, [4, 4], 4]], "fcnet_hiddens": [16]}}`
	o := train(t, "--env", "PixelPong-v0", "--alg", "PPO", "--local-dir", local, "--stop", `{"training_iteration": 1}`,
		"--checkpoint-at-end", "--config", cfg)
	if o.code != 0 {
		t.Fatalf("training: %s", o.stderr)
	}
	if !strings.Contains(o.stdout, "steps/s (") || !strings.Contains(o.stdout, "frames/s)") {
		t.Errorf("iteration line lacks frames/s:\n%s", o.stdout)
	}
	ckpts, _ := filepath.Glob(filepath.Join(local, "*", "PPO_PixelPong-v0_*", "checkpoint_1"))
	if len(ckpts) != 1 {
		t.Fatalf("checkpoints %v, want one", ckpts)
	}
	out := filepath.Join(t.TempDir(), "pong.gif")
	o = train(t, "rollout", "--checkpoint", ckpts[0], "--episodes", "1", "--max-steps", "12", "--render", out)
	if o.code != 0 {
		t.Fatalf("rollout --render: %s", o.stderr)
	}
	if !strings.Contains(o.stdout, "rendered an animated GIF of 12 frames") {
		t.Errorf("rollout output:\n%s", o.stdout)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Image) != 12 || g.Image[0].Bounds().Dx() != 160 || g.Image[0].Bounds().Dy() != 210 {
		t.Errorf("GIF of %d frames of %v, want 12 of 160×210", len(g.Image), g.Image[0].Bounds())
	}
	// PNG frames into a folder.
	dir := filepath.Join(t.TempDir(), "frames")
	if o = train(t, "rollout", "--checkpoint", ckpts[0], "--episodes", "1", "--max-steps", "3", "--render", dir); o.code != 0 {
		t.Fatalf("rollout --render folder: %s", o.stderr)
	}
	if pngs, _ := filepath.Glob(filepath.Join(dir, "frame_*.png")); len(pngs) != 3 {
		t.Errorf("PNG frames %v, want 3", pngs)
	}

	// Corridor-v0 has no rendering.
	local2 := t.TempDir()
	if o = train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local2, "--stop", `{"training_iteration": 1}`, "--checkpoint-at-end"); o.code != 0 {
		t.Fatal(o.stderr)
	}
	ckpts, _ = filepath.Glob(filepath.Join(local2, "*", "FakeAlg_*", "checkpoint_1"))
	if len(ckpts) != 1 {
		t.Fatalf("checkpoints %v", ckpts)
	}
	o = train(t, "rollout", "--checkpoint", ckpts[0], "--episodes", "1", "--render", filepath.Join(t.TempDir(), "x.gif"))
	if o.code == 0 || !strings.Contains(o.stderr, "cannot render itself") {
		t.Errorf("rendering Corridor-v0: code %d, stderr %s", o.code, o.stderr)
	}
}
