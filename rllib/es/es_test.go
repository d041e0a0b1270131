package es

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// small is a CI-sized configuration: a small noise table and batches,
// episodes in the driver.
func small() map[string]any {
	return map[string]any{
		"noise_size": 200_000, "episodes_per_batch": 20, "train_batch_size": 400,
		"eval_episodes": 1, "model": map[string]any{"fcnet_hiddens": []int{16}}, "num_workers": 0,
	}
}

func TestCenteredRanks(t *testing.T) {
	tests := []struct{ in, want []float64 }{
		// Sorted: -1 (index 1), 0 (4), 3 (0), 3 (3), 10 (2); ranks 0..4
		// scaled by 1/4 and shifted by -0.5. The tied 3s rank in order.
		{[]float64{3, -1, 10, 3, 0}, []float64{0, -0.5, 0.5, 0.25, -0.25}},
		{[]float64{7, 2}, []float64{0.5, -0.5}},
		{[]float64{4}, []float64{0}},
	}
	for _, tc := range tests {
		if got := centeredRanks(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("centeredRanks(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestNoiseTableDeterministic(t *testing.T) {
	a, _ := NewNoise(5, 100_000)
	b, _ := NewNoise(5, 100_000)
	c, _ := NewNoise(6, 100_000)
	if !slices.Equal(a, b) {
		t.Error("two noise tables with seed 5 differ")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 5 and 6 gave the same noise table")
	}
	var s, s2 float64
	for _, x := range a {
		s += float64(x)
		s2 += float64(x) * float64(x)
	}
	m, sd := s/float64(len(a)), math.Sqrt(s2/float64(len(a))-(s/float64(len(a)))*(s/float64(len(a))))
	if math.Abs(m) > 0.02 || math.Abs(sd-1) > 0.02 {
		t.Errorf("noise mean %.4f, std %.4f; want standard normal", m, sd)
	}
	// The remote task that builds the shared table gives the same values.
	remote, err := gray.Get(context.Background(), createNoise.Remote(int64(5), 100_000))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(remote, a) {
		t.Error("the remote noise task's table differs from NewNoise's for the same seed")
	}
	if _, err := NewNoise(1, 0); err == nil {
		t.Error("NewNoise with size 0: want an error")
	}
}

// TestAntitheticPairs replays each pair by hand: the episode from θ+σε and
// the one from θ−σε, ε read at the pair's one offset, started from the
// pair's one environment seed, give the returns the worker reported.
func TestAntitheticPairs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseSize, cfg.ActionNoiseStd, cfg.NoiseStdev = 50_000, 0, 0.1
	cfg.Model.Hiddens = []int{8}
	noise, _ := NewNoise(3, cfg.NoiseSize)
	spec := WorkerSpec{Env: "Pendulum-v1", Config: cfg, Seed: 3, Index: 1}
	w, err := NewWorker(context.Background(), spec, gray.SharedValue(noise))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	theta := w.pol.Model.Params().GetFlat(nil)
	stats := w.pol.Filter.Stats()
	r, err := w.Run(context.Background(), Weights{Params: theta, Filter: &stats}, Task{Iteration: 1, MinEpisodes: 6, MinTimesteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NoiseIndices) != 3 || len(r.EnvSeeds) != 3 || r.FilterDelta == nil || r.FilterDelta.N != 6*200 {
		t.Fatalf("Run: %d pairs, %d seeds, filter delta %+v; want 3 pairs of 200-step episodes", len(r.NoiseIndices), len(r.EnvSeeds), r.FilterDelta)
	}
	// Replay every pair in order on a fresh worker (the filter learns as
	// it goes, so the order matters): both episodes of pair i use the
	// noise at its one offset, mirrored, and its one environment seed.
	w2, err := NewWorker(context.Background(), spec, gray.SharedValue(noise))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	_ = w2.pol.Filter.SetStats(stats)
	w2.theta = theta
	dim := len(theta)
	for i, idx := range r.NoiseIndices {
		for _, sign := range []float64{1, -1} {
			w2.perturb(noise[idx:idx+dim], sign*cfg.NoiseStdev)
			got, _, err := w2.episode(context.Background(), r.EnvSeeds[i], true)
			if err != nil {
				t.Fatal(err)
			}
			want := r.ReturnsPos[i]
			if sign < 0 {
				want = r.ReturnsNeg[i]
			}
			if got != want {
				t.Errorf("pair %d: θ%+.0fσε replayed to %v, worker reported %v", i, sign, got, want)
			}
		}
		if r.ReturnsPos[i] == r.ReturnsNeg[i] {
			t.Errorf("pair %d: both perturbations returned %v; the mirrored weights should differ", i, r.ReturnsPos[i])
		}
	}
}

func TestRegistered(t *testing.T) {
	agenttest.Registered(t, "es", func(cfg *Config) bool { return cfg.NoiseSize == 25_000_000 && cfg.ReturnProcMode == "centered_rank" })
}

func TestBadConfig(t *testing.T) {
	refuses := agenttest.Refuses(t, newFromKeys)
	refuses(map[string]any{"noise_stdv": 0.1}, `unknown key "noise_stdv"`)
	refuses(map[string]any{"stepsize": "big"}, `"stepsize" must be a number`)
	refuses(map[string]any{"noise_stdev": -1}, "noise_stdev must be positive")
	refuses(map[string]any{"return_proc_mode": "raw"}, "return_proc_mode")
	refuses(map[string]any{"eval_prob": 2}, "eval_prob")
	refuses(map[string]any{"model": map[string]any{"fcnet_hidens": []int{8}}}, "fcnet_hidens")
	refuses(map[string]any{"noise_size": 10, "num_workers": 0}, "noise_size")
	refuses(map[string]any{"model": map[string]any{"use_lstm": true}}, "model.use_lstm: ES trains feed-forward policies only")
	refuses(map[string]any{"num_gpus": 1}, "num_gpus (1): ES learns on the CPU only for now; set num_gpus: 0")
}

func TestTooManyWorkers(t *testing.T) {
	cfg := small()
	cfg["num_workers"] = 6
	start := time.Now()
	_, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1", Seed: 1}, cfg)
	for _, want := range []string{"num_workers=6 needs 6 CPUs", "the runtime has 4", "set num_workers to at most 4", "--num-cpus"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("6 workers on a 4-CPU runtime: %v, want an error containing %q", err, want)
		}
	}
	t.Logf("%v after %.1fs", err, time.Since(start).Seconds())
	// The CPUs are free again: a fitting agent starts.
	cfg["num_workers"] = 2
	newAgent(t, "CartPole-v1", cfg, 1)
}

func TestLearnsCartPole(t *testing.T) {
	t.Run("local", func(t *testing.T) { learnsCartPole(t, 0) })
	t.Run("two workers", func(t *testing.T) { learnsCartPole(t, 2) })
}

func learnsCartPole(t *testing.T, workers int) {
	if testing.Short() {
		t.Skip("learning test")
	}
	cfg := small()
	cfg["num_workers"] = workers
	cfg["stepsize"], cfg["noise_stdev"] = 0.05, 0.1
	a := newAgent(t, "CartPole-v1", cfg, 1)
	var first, best float64
	for a.timesteps < 100_000 {
		r := agenttest.Train(t, a, 1)
		if r.TrainingIteration == 1 {
			first = r.EpisodeRewardMean
		}
		for _, k := range []string{"update_ratio", "grad_norm", "weights_norm", "episodes_so_far", "eval_reward_mean"} {
			if _, ok := r.Learner[k]; !ok {
				t.Fatalf("result lacks learner statistic %q: %v", k, r.Learner)
			}
		}
		best = math.Max(best, r.EpisodeRewardMean)
		if best >= 200 {
			break
		}
	}
	if best < 200 {
		t.Fatalf("mean perturbed episode reward went from %.1f to at best %.1f within %d steps, want at least 200", first, best, a.timesteps)
	}
	t.Logf("mean reward %.1f (first iteration %.1f) after %d steps, %d iterations", best, first, a.timesteps, a.iteration)
}

func TestSameSeedSameRun(t *testing.T) {
	cfg := small()
	cfg["num_workers"] = 2
	var runs [2][]float64
	for i := range runs {
		a := newAgent(t, "CartPole-v1", cfg, 7)
		agenttest.Train(t, a, 3)
		runs[i] = a.Weights()
		_ = a.Stop()
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Error("two runs with seed 7 and two workers differ")
	}
}

func TestSaveRestoreContinue(t *testing.T) {
	a := newAgent(t, "CartPole-v1", small(), 3)
	agenttest.Train(t, a, 2)
	path := agenttest.Checkpoint(t, a)
	b := agenttest.Restored(t, func() *Agent { return newAgent(t, "CartPole-v1", small(), 3) }, path)
	if !slices.Equal(a.Weights(), b.Weights()) || b.Iteration() != 2 || b.timesteps != a.timesteps || b.episodes != a.episodes {
		t.Fatalf("restored agent differs: iteration %d timesteps %d", b.Iteration(), b.timesteps)
	}
	if !slices.Equal(a.pol.Filter.Stats().Mean, b.pol.Filter.Stats().Mean) || a.opt.State().Step != b.opt.State().Step {
		t.Error("restored observation filter or Adam state differs")
	}
	// The saved agent and the restored one go on alike.
	agenttest.TrainAlike(t, a, b, 1, 3)
	// Checkpoints of other networks, environments or algorithms are refused.
	bigger := small()
	bigger["model"] = map[string]any{"fcnet_hiddens": []int{32}}
	if err := newAgent(t, "CartPole-v1", bigger, 1).Restore(context.Background(), path); err == nil || !strings.Contains(err.Error(), "model config") {
		t.Errorf("restoring into a bigger network: %v", err)
	}
	agenttest.RefusesOther(t, b, newAgent(t, "Acrobot-v1", small(), 1), path, "ES", "PPO")
}

func TestComputeAction(t *testing.T) {
	for _, env := range []string{"CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0"} {
		a := newAgent(t, env, small(), 1)
		agenttest.Train(t, a, 1)
		e, err := envs.Make(env, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs, _ := e.Reset(1)
		act, err := a.ComputeAction(obs)
		if err != nil {
			t.Fatal(err)
		}
		if !e.ActionSpace().Contains(act) {
			t.Errorf("%s: ComputeAction = %v, outside %v", env, act, e.ActionSpace())
		}
		again, _ := a.ComputeAction(obs)
		if !slices.Equal(act, again) {
			t.Errorf("%s: ComputeAction is not deterministic: %v then %v", env, act, again)
		}
		if _, err := a.ComputeAction([]float64{1}); err == nil {
			t.Errorf("%s: ComputeAction with a 1-value observation: want an error", env)
		}
	}
}

// TestWorkerDiesMidIteration kills a worker's process while it runs its
// episodes: the iteration must still finish, with a replacement worker.
func TestWorkerDiesMidIteration(t *testing.T) {
	cfg := small()
	cfg["num_workers"], cfg["train_batch_size"] = 2, 40_000
	a := newAgent(t, "CartPole-v1", cfg, 1)
	p := a.pool.(*actorPool)
	infos, err := p.info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	var res rllib.Result
	go func() {
		var err error
		res, err = a.Train(ctx)
		done <- err
	}()
	// Kill it once it is running episodes: its process has used CPU
	// since Train began (an idle worker uses next to none). A fast
	// iteration may end first: the next one then meets it dead.
	idle, ended := cpuTicks(t, infos[0].PID), false
	for !ended && cpuTicks(t, infos[0].PID) == idle {
		select {
		case err = <-done:
			ended = true
		case <-time.After(time.Millisecond):
		}
	}
	if err := syscall.Kill(infos[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !ended {
		err = <-done
	}
	if err != nil {
		t.Fatalf("iteration with a killed worker: %v", err)
	}
	if res.Extra["workers_restarted"] < 1 {
		// The worker had already answered: the next iteration meets it dead.
		res = agenttest.Train(t, a, 1)
	}
	if res.Extra["workers_restarted"] != 1 || res.EpisodesThisIter < 20 {
		t.Errorf("after killing worker 1: workers_restarted %v, %d episodes", res.Extra["workers_restarted"], res.EpisodesThisIter)
	}
	after, err := p.info(context.Background())
	if err != nil || after[0].PID == infos[0].PID {
		t.Errorf("worker 1 was not replaced by a new process: %v", err)
	}
	agenttest.Train(t, a, 1)
}

// cpuTicks is the CPU time process pid has used, in clock ticks (user and
// system: fields 14 and 15 of /proc/<pid>/stat).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, field 2, may hold spaces: count from its end.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// TestNoiseTableShared checks that every worker reads the noise table from
// one shared mapping of the object store rather than a private copy.
func TestNoiseTableShared(t *testing.T) {
	cfg := small()
	cfg["num_workers"], cfg["noise_size"] = 2, 4_000_000 // 16 MB: far above the inline threshold
	a := newAgent(t, "CartPole-v1", cfg, 1)
	infos, err := a.pool.(*actorPool).info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, info := range infos {
		if info.NoiseLen != 4_000_000 {
			t.Fatalf("worker %d holds %d noise values, want 4000000", i+1, info.NoiseLen)
		}
		if info.NoiseMapping == "" {
			t.Skip("no /proc/self/maps on this system: cannot see where the table lives")
		}
		if !info.NoiseShared {
			t.Errorf("worker %d's noise table is a private copy (%q), not the object store's shared mapping", i+1, info.NoiseMapping)
		}
	}
	file := func(line string) string { f := strings.Fields(line); return f[3] + " " + f[4] + " " + f[5] }
	if file(infos[0].NoiseMapping) != file(infos[1].NoiseMapping) {
		t.Errorf("workers read the noise table from different files: %q and %q", infos[0].NoiseMapping, infos[1].NoiseMapping)
	}
	// The driver reads the same copy: one table in memory for everyone.
	line, shared := mappingOf(uintptr(unsafe.Pointer(&a.noise.data[0])))
	if !shared || file(line) != file(infos[0].NoiseMapping) {
		t.Errorf("the driver reads the noise table from %q, the workers from %q: want the same shared file", line, infos[0].NoiseMapping)
	}
}

// TestTunedConfig checks that configs/cartpole-es.yaml holds only keys ES
// knows, with valid values.
func TestTunedConfig(t *testing.T) {
	keys := agenttest.Experiment(t, "../../configs/cartpole-es.yaml", "ES", "CartPole-v1")
	// Episodes in the driver with a small table: the keys are what is tested.
	keys["num_workers"], keys["noise_size"] = 0, 100_000
	a := newAgent(t, "CartPole-v1", keys, 1)
	if a.Cfg.NoiseStdev != 0.1 || a.Cfg.Model.Hiddens[0] != 16 {
		t.Errorf("decoded config %+v", a.Cfg)
	}
}
