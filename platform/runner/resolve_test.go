package runner

import (
	"strings"
	"testing"

	"github.com/gray-ml/gray/platform/config"
	"github.com/gray-ml/gray/rllib/ppo"
)

// TestResolveDecodesOnce checks that Resolve hands the run the config it
// decoded and validated, as the algorithm's own struct, so that New does
// not decode it again (rllib.Options no longer carries the keys).
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

// TestResolveChecksLearnerThreads checks that num_learner_threads beyond
// the learner's CPUs (the runtime's num_cpus less one per worker) fails in
// Resolve, which runs before any run folder is written, naming the limit.
func TestResolveChecksLearnerThreads(t *testing.T) {
	for _, tc := range []struct {
		numCPUs int
		user    map[string]any
		want    string
	}{
		{4, map[string]any{"num_learner_threads": 0}, "num_learner_threads must be at least 1, got 0"},
		{4, map[string]any{"num_learner_threads": 5}, "num_learner_threads 5 is more than the learner's 4 CPUs"},
		{4, map[string]any{"num_learner_threads": 3, "num_workers": 2}, "set it to at most 2"},
		{4, map[string]any{"num_learner_threads": 2, "num_workers": 2}, ""},
	} {
		_, err := Resolve(config.Experiment{Alg: "PPO", Env: "CartPole-v1", NumCPUs: tc.numCPUs, Config: tc.user})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v on %d CPUs: %v", tc.user, tc.numCPUs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v on %d CPUs: error %v, want one containing %q", tc.user, tc.numCPUs, err, tc.want)
		}
	}
}
