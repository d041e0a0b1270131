package a3c

import (
	"context"
	"math"
	"testing"

	"github.com/gray-ml/gray/rllib"
)

// TestRecurrentPolicyTrains runs A3C with an LSTM policy: runners carry
// the state through their rollouts and send gradients computed over
// padded sequences, the driver applies them, and ComputeAction carries
// its own state until StartEpisode.
func TestRecurrentPolicyTrains(t *testing.T) {
	cfg := map[string]any{
		"num_workers": 1, "updates_per_iter": 5, "rollout_fragment_length": 25,
		"model": map[string]any{"use_lstm": true, "lstm_cell_size": 8, "max_seq_len": 10, "fcnet_hiddens": []int{8}},
	}
	a, err := newFromKeys(context.Background(), rllib.Options{Env: "StatelessCartPole-v1", Seed: 3, LogDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	before := a.Weights()
	r := train(t, a)
	if r.Learner["num_updates"] != 5 || math.IsNaN(r.Learner["policy_loss"]) {
		t.Fatalf("result %+v", r)
	}
	after := a.Weights()
	changed := false
	for i := range before {
		changed = changed || before[i] != after[i]
	}
	if !changed {
		t.Fatal("five gradients left the weights unchanged")
	}
	var sa rllib.EpisodeStarter = a
	if _, err := a.ComputeAction([]float64{0.01, 0.02}); err != nil {
		t.Fatal(err)
	}
	moved := false
	for _, v := range a.actor.State() {
		moved = moved || v != 0
	}
	if !moved {
		t.Fatal("ComputeAction left the recurrent state at zero")
	}
	sa.StartEpisode()
	for _, v := range a.actor.State() {
		if v != 0 {
			t.Fatalf("StartEpisode left state %v", a.actor.State())
		}
	}
}
