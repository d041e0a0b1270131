package ppo

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/rollout"
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

// plainProcessor hides obsProcessor's split (rollout.PartProcessor), so a
// worker built with it preprocesses float64 observations on one goroutine,
// as before sampling was split.
type plainProcessor struct{ p *obsProcessor }

func (q plainProcessor) Size() int { return q.p.Size() }
func (q plainProcessor) Process(dst, raw []float64, update bool) error {
	return q.p.Process(dst, raw, update)
}
func (q plainProcessor) ProcessStream(stream int, start bool, dst, raw []float64, update bool) error {
	return q.p.ProcessStream(stream, start, dst, raw, update)
}

// The driver's sampling gives the same batches, to the bit, whether its
// environments are stepped on one goroutine from float64 observations or
// in parts on the learner's threads from 8-bit frames, for any thread
// count: each environment keeps its own random stream, the running filter
// learns in environment order and the actions are drawn in order. Short
// episodes make truncation and automatic resets happen inside the
// batches.
func TestPixelPongSamplingSameForAnyThreadCount(t *testing.T) {
	cfg := func(threads int) map[string]any {
		c := pixelPongCfg()
		c["num_envs_per_worker"] = 3
		c["train_batch_size"] = 3 * 40
		c["observation_filter"] = "MeanStdFilter"
		c["num_learner_threads"] = threads
		return c
	}
	envCfg := map[string]any{"max_episode_steps": 25}
	sampleTwice := func(a *Agent, w *RolloutWorker) []Samples {
		var out []Samples
		for iter := 1; iter <= 2; iter++ {
			s, err := w.sample(context.Background(), iter)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	build := func(threads int, plain bool) []Samples {
		a, err := newFromKeys(context.Background(), rllib.Options{Env: "PixelPong-v0", EnvConfig: envCfg, Seed: 7, LogDir: t.TempDir()}, cfg(threads))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Stop() })
		if !plain {
			return sampleTwice(a, a.samplers.(*localSampler).w)
		}
		spec := a.WorkerSpec(0)
		vec, err := envs.MakeVector(spec.Env, spec.EnvConfig, spec.Config.NumEnvsPerWorker)
		if err != nil {
			t.Fatal(err)
		}
		// A fresh master filter, as the agent's own started.
		proc, err := newObsProcessor(spec.Env, vec.ObservationSpace(), "MeanStdFilter", spec.Config.Model.Image())
		if err != nil {
			t.Fatal(err)
		}
		rw, err := rollout.NewWithVector(rollout.Config{Env: spec.Env, FragmentLength: spec.Config.fragmentLength(), Seed: spec.Seed}, vec, a.pol, plainProcessor{proc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rw.Close() })
		return sampleTwice(a, &RolloutWorker{spec: spec, pol: a.pol, proc: proc, worker: rw})
	}
	want := build(1, true)
	episodes := 0
	for _, s := range want {
		episodes += len(s.Batch.Episodes)
	}
	if episodes == 0 {
		t.Fatal("no episode ended in the batches: the test would not cover resets")
	}
	for _, threads := range []int{1, 2, 3} {
		got := build(threads, false)
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%d learner threads, batch %d differs from the one-goroutine float64 sampling", threads, k+1)
			}
		}
	}
}
