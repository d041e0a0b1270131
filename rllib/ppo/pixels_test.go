package ppo

import (
	"context"
	"strings"
	"testing"

	"github.com/gray-ml/gray/rllib"
)

// pixelPongCfg is a tiny PixelPong-v0 setting: two frame differences of
// 20×20 into a one-layer conv net.
func pixelPongCfg() map[string]any {
	return map[string]any{
		"num_envs_per_worker": 2, "train_batch_size": 64, "num_sgd_iter": 1, "sgd_minibatch_size": 32,
		"model": map[string]any{
			"crop": []int{34, 16, 0, 0}, "dim": 20, "frame_diff": true, "framestack": 2,
			"conv_filters": []any{[]any{4, []int{4, 4}, 4}}, "fcnet_hiddens": []int{16},
		},
	}
}

// PPO trains from PixelPong's frames with frame differencing and stacking,
// and ComputeAction (with StartEpisode) plays from raw frames.
func TestPixelPongTrainsAndActs(t *testing.T) {
	a := newAgent(t, "PixelPong-v0", pixelPongCfg(), 1)
	if got := a.proc.Size(); got != 20*20*2 {
		t.Fatalf("processed observation has %d values, want 20×20×2", got)
	}
	r, err := a.Train(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.TimestepsThisIter != 64 {
		t.Errorf("iteration sampled %d steps, want 64", r.TimestepsThisIter)
	}
	obs := make([]float64, 210*160*3)
	var e rllib.EpisodeStarter = a
	e.StartEpisode()
	for range 3 {
		act, err := a.ComputeAction(obs)
		if err != nil {
			t.Fatal(err)
		}
		if len(act) != 1 || act[0] < 0 || act[0] > 5 {
			t.Fatalf("action %v, want one of PixelPong's six", act)
		}
	}
}

// Frame stacking on a vector observation is refused before training, with
// the key named.
func TestFrameStackNeedsImages(t *testing.T) {
	_, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1", LogDir: t.TempDir()}, map[string]any{"model": map[string]any{"framestack": 4}})
	if err == nil || !strings.Contains(err.Error(), "framestack 4 needs image observations") {
		t.Fatalf("error %v, want one naming framestack", err)
	}
}
