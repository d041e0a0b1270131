package plugins_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gray-ml/gray/plugins"
	"github.com/gray-ml/gray/rllib"
	_ "github.com/gray-ml/gray/rllib/ppo" // registers PPO
)

// ppoConfig is the same for both sides: sampling in the driver (the
// plugin's process is the driver's child), 8 environments per step batch.
func ppoConfig() map[string]any {
	return map[string]any{
		"num_workers": 0, "num_envs_per_worker": 8, "train_batch_size": 2048,
		"num_sgd_iter": 10, "sgd_minibatch_size": 256, "lr": 0.0003,
		"kl_coeff": 0.2, "kl_target": 0.01, "vf_loss_coeff": 0.5,
		"model": map[string]any{"fcnet_hiddens": []any{64, 64}, "fcnet_activation": "tanh"},
	}
}

// registerCartPolePlugin makes the CartPole plugin the environment
// "PluginCartPole-v1", as a plugins folder would.
func registerCartPolePlugin(b *testing.B) string {
	const name = "PluginCartPole-v1"
	for _, n := range rllibEnvNames() {
		if n == name {
			return name
		}
	}
	// Not b.TempDir: the registration outlives this benchmark's run.
	dir := filepath.Join(bins, "folder")
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(bins, "cartpole-plugin"), filepath.Join(dir, "env", name)); err != nil {
		b.Fatal(err)
	}
	if err := plugins.RegisterFolder(dir); err != nil {
		b.Fatal(err)
	}
	return name
}

// BenchmarkPPOSolveCartPole trains PPO (seed 1) until the mean return
// reaches 475 on the built-in CartPole-v1 and on the same environment served
// by a Go plugin, and reports the wall time and steps it took.
func BenchmarkPPOSolveCartPole(b *testing.B) {
	const target, budget = 475, 400_000
	for _, side := range []string{"builtin", "goplugin"} {
		b.Run(side, func(b *testing.B) {
			env := "CartPole-v1"
			if side == "goplugin" {
				env = registerCartPolePlugin(b)
			}
			alg, err := rllib.Lookup("PPO")
			if err != nil {
				b.Fatal(err)
			}
			var wall time.Duration
			var steps int64
			for i := 0; i < b.N; i++ {
				ctx := context.Background()
				start := time.Now()
				a, err := alg.Make(ctx, rllib.Options{Env: env, Seed: 1, LogDir: b.TempDir()}, ppoConfig())
				if err != nil {
					b.Fatal(err)
				}
				for {
					r, err := a.Train(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if r.EpisodeRewardMean >= target {
						steps += r.TimestepsTotal
						break
					}
					if r.TimestepsTotal >= budget {
						b.Fatalf("not solved within %d steps (mean return %.1f)", budget, r.EpisodeRewardMean)
					}
				}
				wall += time.Since(start)
				_ = a.Stop()
			}
			b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s")
			b.ReportMetric(float64(steps)/float64(b.N), "steps")
		})
	}
}
