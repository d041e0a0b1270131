package runner

import (
	"testing"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/rllib/ppo"
)

// TestResolveDecodesOnce checks that Resolve hands the run the config it
// decoded and validated, as the algorithm's own struct, so that New does
// not decode it again (rllib.Options.Decoded).
func TestResolveDecodesOnce(t *testing.T) {
	for name, user := range map[string]map[string]any{
		"flat":              {"lr": 0.01},
		"env_config inside": {"lr": 0.01, "env_config": map[string]any{"max_episode_steps": 50}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Resolve(config.Experiment{Alg: "PPO", Env: "CartPole-v1", Config: user})
			if err != nil {
				t.Fatal(err)
			}
			c, ok := r.Config.(*ppo.Config)
			if !ok {
				t.Fatalf("Config is %T, want *ppo.Config", r.Config)
			}
			if c.LR != 0.01 {
				t.Fatalf("decoded lr %v, want 0.01", c.LR)
			}
		})
	}
}
