package ppo

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/models/cuda"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// newWithBackendKeys is newFromKeys with the learner backend num_gpus
// uses.
func newWithBackendKeys(backend string) func(context.Context, rllib.Options, map[string]any) (*Agent, error) {
	return agenttest.FromKeys("PPO", DefaultConfig, func(ctx context.Context, o rllib.Options, c Config) (*Agent, error) {
		return newWithBackend(ctx, o, c, backend)
	})
}

// gpuCartPole is fastCartPole with two rollout workers and the learner on
// the (declared) GPU.
func gpuCartPole(gpus float64) map[string]any {
	c := fastCartPole()
	c["num_workers"], c["num_gpus"], c["train_batch_size"], c["sgd_minibatch_size"] = 2, gpus, 512, 128
	c["num_learner_threads"] = 1 // as the CPU stand-in uses: the shards fix the sum's order
	return c
}

// On a machine without CUDA, num_gpus: 1 fails in New with the reason and
// the fix, and leaves nothing running.
func TestNumGPUsWithoutCUDA(t *testing.T) {
	if d, err := cuda.Open(0); err == nil {
		_ = d.Close()
		t.Skip("this machine has a usable GPU")
	}
	_, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1", Seed: 1, LogDir: t.TempDir()}, gpuCartPole(1))
	if err == nil {
		t.Fatal("num_gpus: 1 without CUDA: New succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "num_gpus: 0") || strings.Contains(msg, "\n") {
		t.Fatalf("num_gpus: 1 without CUDA: %q; want one line naming num_gpus: 0", msg)
	}
	t.Log(msg)
}

// checkGPUs refuses num_gpus: 1 when the runtime declares no GPU, with
// the same one-line fix.
func TestCheckGPUs(t *testing.T) {
	for _, tc := range []struct {
		res map[string]float64
		ok  bool
	}{{nil, true}, {map[string]float64{"CPU": 4, "GPU": 1}, true}, {map[string]float64{"CPU": 16}, false}} {
		err := checkGPUs(1, tc.res)
		if (err == nil) != tc.ok {
			t.Errorf("resources %v: %v", tc.res, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "num_gpus: 0") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("resources %v: %q; want one line naming num_gpus: 0", tc.res, err)
		}
	}
}

// With num_gpus: 1 the learner runs in an actor holding GPU 0, and the
// run is the same as learning in the driver (the CPU learner stands in
// for CUDA here: same placement, same traffic, same arithmetic).
func TestNumGPUsLearnerActor(t *testing.T) {
	newA := func(gpus float64) *Agent {
		return agenttest.New(t, newWithBackendKeys(BackendCPU), rllib.Options{Env: "CartPole-v1", Seed: 3}, gpuCartPole(gpus))
	}
	g, c := newA(1), newA(0)
	if g.gpu == nil || !slices.Equal(g.gpu.info.GPUIDs, []int{0}) || g.gpu.info.Backend != BackendCPU {
		t.Fatalf("learner actor: %+v; want the CPU stand-in holding GPU [0]", g.gpu)
	}
	if c.gpu != nil {
		t.Fatal("num_gpus: 0 started a learner actor")
	}
	rg, rc := agenttest.Train(t, g, 2), agenttest.Train(t, c, 2)
	if rg.Learner["total_loss"] != rc.Learner["total_loss"] || !slices.Equal(g.Weights(), c.Weights()) {
		t.Fatalf("learner actor: loss %v, weights differ=%v; in the driver: loss %v",
			rg.Learner["total_loss"], !slices.Equal(g.Weights(), c.Weights()), rc.Learner["total_loss"])
	}
	// A restore changes the driver's weights: the actor must take them.
	// Two fresh agents restored from one checkpoint learn the same.
	path, err := c.Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Free the CPUs for the next two (the runtime has four).
	if err := errors.Join(g.Stop(), c.Stop()); err != nil {
		t.Fatal(err)
	}
	g2, c2 := newA(1), newA(0)
	for _, a := range []*Agent{g2, c2} {
		if err := a.Restore(context.Background(), path); err != nil {
			t.Fatal(err)
		}
	}
	rg, rc = agenttest.Train(t, g2, 1), agenttest.Train(t, c2, 1)
	if !slices.Equal(g2.Weights(), c2.Weights()) {
		t.Fatalf("after Restore the learner actor went on from other weights (loss %v, in the driver %v)", rg.Learner["total_loss"], rc.Learner["total_loss"])
	}
}

// On a GPU host: the CUDA learner's first iteration matches the CPU
// learner's on the same batch (same seed, so same sampling) to float32
// rounding, and training goes on without error.
func TestNumGPUsLearnsOnGPU(t *testing.T) {
	if d, err := cuda.Open(0); err != nil {
		t.Skip(err)
	} else {
		_ = d.Close()
	}
	newA := func(gpus float64) *Agent {
		return agenttest.New(t, newWithBackendKeys(BackendCUDA), rllib.Options{Env: "CartPole-v1", Seed: 5}, gpuCartPole(gpus))
	}
	g, c := newA(1), newA(0)
	t.Logf("learner: %+v", g.gpu.info)
	rg, rc := agenttest.Train(t, g, 1), agenttest.Train(t, c, 1)
	for _, k := range []string{"total_loss", "policy_loss", "vf_loss", "entropy", "kl"} {
		got, want := rg.Learner[k], rc.Learner[k]
		if math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("%s on the GPU %.6g, on the CPU %.6g", k, got, want)
		}
	}
	r := agenttest.Train(t, g, 3)
	if math.IsNaN(r.Learner["total_loss"]) {
		t.Fatal("GPU learner: NaN loss")
	}
}
