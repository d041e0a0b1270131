package es

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
)

func init() { rllib.Register(rllib.Define("ES", DefaultConfig, New)) }

// Agent is an ES agent. It implements rllib.Agent.
type Agent struct {
	rllib.Base[Config]
	// pol holds θ, the weights the driver updates, and the master
	// observation filter.
	pol   *models.Policy
	opt   *models.Adam
	noise noiseTable
	pool  pool

	iteration int
	timesteps int64
	episodes  int64
	restarts  int
	// actor acts for ComputeAction.
	actor *actor
}

// New creates an ES agent for opts.Env with cfg (DefaultConfig with the
// user's keys over it).
// With num_workers above 0 it needs the gray runtime: it creates the noise
// table with a remote task and starts the worker actors.
func New(ctx context.Context, opts rllib.Options, cfg Config) (*Agent, error) {
	base, obsSpace, actSpace, err := rllib.NewBase("ES", opts, cfg)
	if err != nil {
		return nil, err
	}
	pol, box, err := newPolicy(opts.Env, obsSpace, actSpace, cfg, base.Seed)
	if err != nil {
		return nil, fmt.Errorf("ES: %w", err)
	}
	if pol.Model.Params().Len() > cfg.NoiseSize {
		return nil, fmt.Errorf("ES config: noise_size %d is smaller than the policy's %d weights; raise noise_size or shrink the model", cfg.NoiseSize, pol.Model.Params().Len())
	}
	a := &Agent{Base: base, pol: pol, opt: models.NewAdam(cfg.Stepsize), actor: newActor(pol, box)}
	if err := a.startWorkers(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// startWorkers creates the noise table and the workers that share it.
func (a *Agent) startWorkers(ctx context.Context) error {
	if a.Cfg.NumWorkers == 0 {
		noise, err := NewNoise(a.Seed, a.Cfg.NoiseSize)
		if err != nil {
			return err
		}
		a.noise = noiseTable{noise}
		w, err := NewWorker(ctx, a.WorkerSpec(0), gray.SharedValue(noise))
		if err != nil {
			return err
		}
		a.pool = &localPool{w: w}
		return nil
	}
	if !gray.IsInitialized() {
		return fmt.Errorf("ES: num_workers %d needs the gray runtime: call gray.Init first (the train command does), or set num_workers to 0 to run episodes in this process", a.Cfg.NumWorkers)
	}
	if err := rllib.CheckWorkers("ES", a.Cfg.NumWorkers, "to run episodes in this process"); err != nil {
		return err
	}
	ref := createNoise.Remote(a.Seed, a.Cfg.NoiseSize)
	// The driver reads the table too: the update sums the noise at every
	// offset the workers report.
	noise, err := gray.Get(ctx, ref)
	if err != nil {
		return fmt.Errorf("ES: creating the noise table: %w", err)
	}
	a.noise = noiseTable{noise}
	specs := make([]WorkerSpec, a.Cfg.NumWorkers)
	for i := range specs {
		specs[i] = a.WorkerSpec(i + 1)
	}
	p, err := newActorPool(ctx, specs, ref, a.Cfg)
	if err != nil {
		return err
	}
	a.pool = p
	return nil
}

// Iteration implements rllib.Agent.
func (a *Agent) Iteration() int { return a.iteration }

// Weights returns a copy of θ.
func (a *Agent) Weights() []float64 { return a.pol.Model.Params().GetFlat(nil) }

// Train implements rllib.Agent: one generation of antithetic pairs over the
// workers, then one Adam step on θ. A NaN or Inf in a return or in θ
// fails the iteration and leaves θ, the optimizer, the filter and the
// counters as they were.
func (a *Agent) Train(ctx context.Context) (rllib.Result, error) {
	start := time.Now()
	iter := a.iteration + 1
	fail := func(err error) (rllib.Result, error) {
		return rllib.Result{}, fmt.Errorf("ES iteration %d: %w", iter, err)
	}
	if a.pool == nil {
		return fail(fmt.Errorf("the agent has been stopped"))
	}
	n := a.Cfg.workers()
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{Iteration: iter, MinEpisodes: share(a.Cfg.EpisodesPerBatch, n),
			MinTimesteps: share(a.Cfg.TrainBatchSize, n), EvalEpisodes: evalShare(a.Cfg.EvalEpisodes, n, i)}
	}
	weights := Weights{Params: a.Weights()}
	if a.pol.Filter != nil {
		s := a.pol.Filter.Stats()
		weights.Filter = &s
	}
	results, restarts, err := a.pool.run(ctx, weights, tasks)
	a.restarts += restarts
	if err != nil {
		return fail(err)
	}
	sampleTime := time.Since(start)

	// Gather the pairs in worker order: the same run for the same seed.
	var indices []int
	var returns, evalReturns, lengths []float64
	var evalSteps int64
	for _, r := range results {
		if len(r.ReturnsPos) != len(r.NoiseIndices) || len(r.ReturnsNeg) != len(r.NoiseIndices) ||
			len(r.LengthsPos) != len(r.NoiseIndices) || len(r.LengthsNeg) != len(r.NoiseIndices) {
			return fail(fmt.Errorf("worker %d returned %d offsets but %d/%d returns", r.Worker, len(r.NoiseIndices), len(r.ReturnsPos), len(r.ReturnsNeg)))
		}
		for j, idx := range r.NoiseIndices {
			if idx < 0 || idx+a.pol.Model.Params().Len() > len(a.noise.data) {
				return fail(fmt.Errorf("worker %d returned noise offset %d outside the table", r.Worker, idx))
			}
			for _, x := range []float64{r.ReturnsPos[j], r.ReturnsNeg[j]} {
				if !rllib.Finite(x) {
					return fail(fmt.Errorf("worker %d: an episode returned %v; θ kept from iteration %d", r.Worker, x, a.iteration))
				}
			}
			indices = append(indices, idx)
			returns = append(returns, r.ReturnsPos[j], r.ReturnsNeg[j])
			lengths = append(lengths, float64(r.LengthsPos[j]), float64(r.LengthsNeg[j]))
		}
		evalReturns = append(evalReturns, r.EvalReturns...)
		for _, l := range r.EvalLengths {
			evalSteps += int64(l)
		}
	}
	if len(indices) == 0 {
		return fail(fmt.Errorf("the workers ran no episodes"))
	}

	learnStart := time.Now()
	stats, err := a.update(indices, returns)
	if err != nil {
		return fail(err)
	}
	// Merge the workers' observation statistics only once the iteration
	// has succeeded, so a failed one leaves the filter as it was.
	if a.pol.Filter != nil {
		for _, r := range results {
			if r.FilterDelta == nil {
				return fail(fmt.Errorf("worker %d returned no observation statistics", r.Worker))
			}
			if err := a.pol.Filter.Merge(*r.FilterDelta); err != nil {
				return fail(fmt.Errorf("merging worker %d's observation filter: %w", r.Worker, err))
			}
		}
	}
	learnTime := time.Since(learnStart)

	var steps int64
	for _, l := range lengths {
		steps += int64(l)
	}
	a.iteration = iter
	a.timesteps += steps
	a.episodes += int64(len(returns))
	res := rllib.Result{
		TrainingIteration: a.iteration,
		TimestepsTotal:    a.timesteps,
		TimestepsThisIter: steps,
		EpisodesTotal:     a.episodes,
		EpisodesThisIter:  len(returns),
		EpisodeRewardMean: mean(returns),
		EpisodeRewardMin:  slices.Min(returns), // an iteration has at least one episode
		EpisodeRewardMax:  slices.Max(returns),
		EpisodeLenMean:    mean(lengths),
		TimeThisIterS:     time.Since(start).Seconds(),
		Learner: map[string]float64{
			"update_ratio":    stats.updateRatio,
			"grad_norm":       stats.gradNorm,
			"weights_norm":    stats.weightsNorm,
			"episodes_so_far": float64(a.episodes),
			"stepsize":        a.Cfg.Stepsize,
		},
		Extra: map[string]float64{
			"antithetic_pairs":   float64(len(indices)),
			"eval_episodes":      float64(len(evalReturns)),
			"eval_timesteps":     float64(evalSteps),
			"workers_restarted":  float64(a.restarts),
			"sample_time_s":      sampleTime.Seconds(),
			"learn_time_s":       learnTime.Seconds(),
			"sample_steps_per_s": rllib.PerSecond(float64(steps+evalSteps), sampleTime),
		},
	}
	// JSON has no NaN: the keys are absent in an iteration without
	// evaluation episodes (eval_episodes 0 and no eval_prob hit).
	if len(evalReturns) > 0 {
		res.Learner["eval_reward_mean"] = mean(evalReturns)
		res.Extra["eval_reward_mean"] = mean(evalReturns)
		res.Extra["eval_reward_max"] = slices.Max(evalReturns)
	}
	return res, nil
}

type updateStats struct{ gradNorm, weightsNorm, updateRatio float64 }

// update is ES's step: fitness from centred ranks, the gradient estimate
// ĝ = Σᵢ (F(θ+σεᵢ) − F(θ−σεᵢ)) εᵢ / N over the N pairs, weight decay, and
// an Adam step on −ĝ + l2·θ (ascent on the fitness). On a non-finite θ it
// puts θ and Adam back and fails.
func (a *Agent) update(indices []int, returns []float64) (updateStats, error) {
	params := a.pol.Model.Params()
	dim := params.Len()
	ranks := centeredRanks(returns)
	g := make([]float64, dim)
	for i, idx := range indices {
		w := ranks[2*i] - ranks[2*i+1]
		if w == 0 {
			continue
		}
		for j, e := range a.noise.get(idx, dim) {
			g[j] += w * float64(e)
		}
	}
	theta := params.Flat()
	before := append([]float64(nil), theta...)
	gradNorm := 0.0
	for j := range g {
		g[j] /= float64(len(indices))
		gradNorm += g[j] * g[j]
		g[j] = -g[j] + a.Cfg.L2Coeff*theta[j]
	}
	goodOpt := a.opt.State()
	a.opt.LR = a.Cfg.Stepsize
	if err := a.opt.Step(theta, g); err != nil {
		return updateStats{}, fmt.Errorf("the Adam step: %w", err)
	}
	var stepNorm, thetaNorm, beforeNorm float64
	for j, x := range theta {
		if !rllib.Finite(x) {
			copy(theta, before)
			_ = a.opt.SetState(goodOpt)
			return updateStats{}, fmt.Errorf("weight %d became %v after the update; θ and optimizer state kept from iteration %d", j, x, a.iteration)
		}
		d := x - before[j]
		stepNorm += d * d
		thetaNorm += x * x
		beforeNorm += before[j] * before[j]
	}
	return updateStats{
		gradNorm:    math.Sqrt(gradNorm),
		weightsNorm: math.Sqrt(thetaNorm),
		updateRatio: math.Sqrt(stepNorm) / math.Max(math.Sqrt(beforeNorm), 1e-12),
	}, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// ComputeAction implements rllib.Agent: the policy's deterministic action
// for θ (argmax for Discrete, clipped output for Box, no action noise),
// with the observation passed through the preprocessor and the filter
// (without updating it).
func (a *Agent) ComputeAction(obs []float64) ([]float64, error) {
	act, err := a.actor.act(obs, false, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("ES: ComputeAction: %w", err)
	}
	return append([]float64(nil), act...), nil
}

// Stop implements rllib.Agent: it stops the workers.
func (a *Agent) Stop() error {
	if a.pool == nil {
		return nil
	}
	err := a.pool.close()
	a.pool = nil
	return err
}

var _ rllib.Agent = (*Agent)(nil)
