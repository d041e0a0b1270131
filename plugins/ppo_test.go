package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/rllib"
	_ "github.com/gray-ml/gray/rllib/ppo" // registers PPO
)

// trainPPO trains PPO on env (CI-sized) until the mean episode return
// reaches target or the step budget runs out, and returns the best mean.
func trainPPO(t *testing.T, env string, cfg map[string]any, target float64, budget int64) float64 {
	t.Helper()
	alg, err := rllib.Lookup("PPO")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := alg.Make(ctx, rllib.Options{Env: env, Seed: 1, LogDir: t.TempDir()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	best := -1e9
	for {
		r, err := a.Train(ctx)
		if err != nil {
			t.Fatal(err)
		}
		best = max(best, r.EpisodeRewardMean)
		if best >= target || r.TimestepsTotal >= budget {
			t.Logf("%s: best mean return %.3f after %d steps", env, best, r.TimestepsTotal)
			return best
		}
	}
}

func gridPPOConfig() map[string]any {
	return map[string]any{
		"num_workers": 0, "num_envs_per_worker": 8, "train_batch_size": 1024,
		"num_sgd_iter": 4, "sgd_minibatch_size": 256, "lr": 0.003,
	}
}

// registerAs installs the plugin at exe in a fresh plugins folder under
// name, the way a user's ~/.gray/plugins/env/<name> is found.
func registerAs(t *testing.T, name, exe string) {
	t.Helper()
	dir := t.TempDir()
	install(t, filepath.Join(dir, "env", name), exe)
	if err := RegisterFolder(dir); err != nil {
		t.Fatal(err)
	}
}

// A random policy on the default 5×5 grid returns about -0.4; walking
// straight to the goal returns 0.93 to 0.96.
const gridTarget = 0.9

func TestPPOLearnsGoGridWorldPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test")
	}
	registerAs(t, "PPOGrid-v0", gridworldBin)
	if best := trainPPO(t, "PPOGrid-v0", gridPPOConfig(), gridTarget, 40_000); best < gridTarget {
		t.Errorf("PPO on the Go grid-world plugin reached a mean return of %.3f, want %.2f", best, gridTarget)
	}
}

func TestPPOLearnsPythonGridWorldPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test")
	}
	if why := pythonReady(); why != "" {
		t.Skip(why)
	}
	if _, err := os.Stat(pythonGridBin); err != nil {
		t.Fatal(err)
	}
	registerAs(t, "PPOPyGrid-v0", pythonGridBin)
	if best := trainPPO(t, "PPOPyGrid-v0", gridPPOConfig(), gridTarget, 40_000); best < gridTarget {
		t.Errorf("PPO on the Python grid-world plugin reached a mean return of %.3f, want %.2f", best, gridTarget)
	}
}

// workerGridName is the grid-world plugin's name in the test's plugins
// folder, which TestMain registers in the driver and in every worker.
const workerGridName = "WorkerGrid-v0"

// TestPPOWithRolloutWorkersOnPlugin runs the plugin environment inside
// rollout worker actors (separate processes), as a real run does: each
// worker process starts its own plugin process.
func TestPPOWithRolloutWorkersOnPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test")
	}
	cfg := gridPPOConfig()
	cfg["num_workers"] = 2
	cfg["num_envs_per_worker"] = 4
	if best := trainPPO(t, workerGridName, cfg, gridTarget, 40_000); best < gridTarget {
		t.Errorf("PPO with 2 rollout workers on the grid-world plugin reached a mean return of %.3f, want %.2f", best, gridTarget)
	}
}

// TestPPOLearnsWithModelPlugin trains PPO whose policy and value network is
// the example model plugin, named in the model config as a user does.
func TestPPOLearnsWithModelPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("learning test")
	}
	modelBin := buildExample(t, "model")
	cfg := gridPPOConfig()
	cfg["model"] = map[string]any{"custom_model": Prefix + modelBin, "custom_options": map[string]any{"hidden": 32}}
	if best := trainPPO(t, Prefix+gridworldBin, cfg, gridTarget, 60_000); best < gridTarget {
		t.Errorf("PPO with a model plugin on the grid world reached a mean return of %.3f, want %.2f", best, gridTarget)
	}
}

func TestUnknownCustomModelIsAClearError(t *testing.T) {
	alg, err := rllib.Lookup("PPO")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ model, want string }{
		{"nosuch:thing", `custom_model "nosuch:thing": unknown prefix; known prefixes: plugin:`},
		{Prefix + filepath.Join(t.TempDir(), "missing"), "no such file"},
	} {
		_, err := alg.Make(context.Background(), rllib.Options{
			Env: "CartPole-v1", Seed: 1, LogDir: t.TempDir()}, map[string]any{"num_workers": 0, "model": map[string]any{"custom_model": tc.model}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("custom_model %q: got %v, want an error containing %q", tc.model, err, tc.want)
		}
	}
}
