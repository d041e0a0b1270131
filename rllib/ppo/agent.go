package ppo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
	"github.com/gray-ml/gray/rllib/schedule"
)

func init() { rllib.Register(rllib.Define("PPO", DefaultConfig, New)) }

// Agent is a PPO agent. It implements rllib.Agent.
type Agent struct {
	rllib.Base[Config]
	// pol holds the master weights the learner updates; proc holds the
	// master observation filter.
	pol     *policy
	proc    *obsProcessor
	learner *learner
	// gpu is the learner actor with num_gpus: 1 (nil: learner runs here).
	gpu *remoteLearner
	lr  schedule.Piecewise
	// samplers collect experience: the local worker when num_workers is 0,
	// else the actors.
	samplers samplers

	iteration int
	timesteps int64
	klCoeff   float64
	window    *sample.EpisodeWindow
	// actor acts for ComputeAction, carrying a recurrent policy's state.
	actor rollout.Actor
}

// samplers is how the agent collects one iteration's experience.
type samplers interface {
	// sample returns the next iteration's batches and the driver's time
	// spent putting weights and submitting calls for them.
	sample(ctx context.Context, a *Agent) ([]Samples, time.Duration, error)
	// prefetch starts sampling the iteration after the next one with the
	// current weights (sample_async), while the driver learns.
	prefetch(ctx context.Context, a *Agent) error
	// recycle hands back an iteration's batch after learning from it, for
	// a sampler that can reuse its buffers.
	recycle(b sample.Batch)
	close() error
}

// New creates a PPO agent for opts.Env with cfg (DefaultConfig with the
// user's keys over it).
func New(ctx context.Context, opts rllib.Options, cfg Config) (*Agent, error) {
	return newWithBackend(ctx, opts, cfg, BackendCUDA)
}

// newWithBackend is New with the learner backend num_gpus uses (tests stand
// the CPU learner in for CUDA on machines without a GPU).
func newWithBackend(ctx context.Context, opts rllib.Options, cfg Config, gpuBackend string) (*Agent, error) {
	base, obsSpace, actSpace, err := rllib.NewBase("PPO", opts, cfg)
	if err != nil {
		return nil, err
	}
	seed := base.Seed
	proc, err := newObsProcessor(opts.Env, obsSpace, cfg.ObservationFilter, cfg.Model.Image())
	if err != nil {
		return nil, fmt.Errorf("PPO: %w", err)
	}
	pol, err := newPolicy(proc.pre, actSpace, cfg.Model, seed)
	if err != nil {
		return nil, fmt.Errorf("PPO: %w", err)
	}
	a := &Agent{
		Base: base, pol: pol, proc: proc,
		lr: cfg.lrSchedule(), klCoeff: cfg.KLCoeff, actor: rollout.NewActor(actSpace),
		window: sample.NewEpisodeWindow(cfg.MetricsSmoothingEpisodes),
	}
	threads, err := rllib.LearnerThreads("PPO", cfg.NumLearnerThreads, cfg.NumWorkers)
	if err != nil {
		return nil, errors.Join(err, pol.Close())
	}
	a.learner, err = newLearner(&a.Cfg, pol, threads, func() (*policy, error) {
		return newPolicy(proc.pre, actSpace, cfg.Model, seed)
	})
	if err != nil {
		return nil, fmt.Errorf("PPO: %w", err)
	}
	if cfg.NumGPUs > 0 {
		if a.gpu, err = newRemoteLearner(ctx, a, gpuBackend); err != nil {
			return nil, errors.Join(err, a.learner.close(), pol.Close())
		}
	}
	if a.samplers, err = newSamplers(ctx, a); err != nil {
		return nil, errors.Join(err, a.stopLearner())
	}
	return a, nil
}

// Iteration implements rllib.Agent.
func (a *Agent) Iteration() int { return a.iteration }

// Weights returns a copy of the policy's flat weights.
func (a *Agent) Weights() []float64 { return a.pol.Params.GetFlat(nil) }

// Train implements rllib.Agent: it samples train_batch_size steps,
// computes advantages and runs minibatch SGD. On NaN or Inf in a loss,
// gradient or weight it returns an error naming the step and leaves the
// weights, optimizer and iteration as they were before the call.
func (a *Agent) Train(ctx context.Context) (rllib.Result, error) {
	if a.samplers == nil {
		return rllib.Result{}, errors.New("PPO: Train after Stop: create a new agent (and Restore a checkpoint to continue)")
	}
	start := time.Now()
	iter := a.iteration + 1
	parts, putTime, err := a.samplers.sample(ctx, a)
	if err != nil {
		return rllib.Result{}, fmt.Errorf("PPO iteration %d: sampling: %w", iter, err)
	}
	// The driver's own share: gathering the batches (and, above, putting
	// the weights), as opposed to waiting for samples or learning.
	gatherStart := time.Now()
	batches := make([]sample.Batch, len(parts))
	for i, p := range parts {
		batches[i] = p.Batch
		if p.FilterDelta != nil && a.proc.filter != nil && a.Cfg.NumWorkers > 0 {
			if err := a.proc.filter.Merge(*p.FilterDelta); err != nil {
				return rllib.Result{}, fmt.Errorf("PPO iteration %d: merging worker %d's observation filter: %w", iter, i+1, err)
			}
		}
	}
	b, err := joinBatches(batches, a.Cfg.NumWorkers == 0)
	if err != nil {
		return rllib.Result{}, fmt.Errorf("PPO iteration %d: %w", iter, err)
	}
	// The learner copies minibatches out of b, so once this iteration is
	// over the sampler may refill b's buffers.
	defer a.samplers.recycle(b)
	if err := sample.ComputeGAE(&b, a.Cfg.Gamma, a.Cfg.Lambda); err != nil {
		return rllib.Result{}, fmt.Errorf("PPO iteration %d: %w", iter, err)
	}
	explVar := sample.ExplainedVariance(b.VPreds, b.ValueTargets)
	if a.Cfg.NormalizeAdvantages {
		sample.Standardize(b.Advantages)
	}
	gatherTime := time.Since(gatherStart)
	sampleTime := time.Since(start)
	if a.Cfg.SampleAsync {
		// The workers sample the next batch with the weights as they are
		// now, one iteration old by the time it is learned from.
		prefetchStart := time.Now()
		if err := a.samplers.prefetch(ctx, a); err != nil {
			return rllib.Result{}, fmt.Errorf("PPO iteration %d: starting the next sampling: %w", iter, err)
		}
		putTime += time.Since(prefetchStart)
	}

	// Keep the last good state: a NaN mid-SGD must not corrupt it.
	learnStart := time.Now()
	goodWeights := a.pol.Params.GetFlat(nil)
	goodOpt := a.learner.opt.State()
	lr := a.lr.Value(a.timesteps)
	var stats learnStats
	if a.gpu != nil {
		stats, err = a.gpu.learn(ctx, a, &b, lr, a.klCoeff, iter)
	} else {
		stats, err = a.learner.learn(ctx, &b, lr, a.klCoeff, shuffleRNG(a.Seed, iter))
	}
	if err != nil {
		_ = a.pol.Params.SetFlat(goodWeights)
		_ = a.learner.opt.SetState(goodOpt)
		return rllib.Result{}, fmt.Errorf("PPO iteration %d: %w; weights and optimizer state kept from iteration %d", iter, err, a.iteration)
	}
	learnTime := time.Since(learnStart)
	klCoeffUsed := a.klCoeff
	a.updateKL(stats.kl)

	a.iteration = iter
	a.timesteps += int64(b.Len())
	a.window.Add(b.Episodes...)
	ep := a.window.Stats()
	learnerRows := float64(b.Len() * a.Cfg.NumSGDIter)
	iterTime := time.Since(start)
	driverTime := putTime + gatherTime
	return rllib.Result{
		TrainingIteration: a.iteration,
		TimestepsTotal:    a.timesteps,
		TimestepsThisIter: int64(b.Len()),
		EpisodesTotal:     a.window.Total(),
		EpisodesThisIter:  len(b.Episodes),
		EpisodeRewardMean: ep.RewardMean,
		EpisodeRewardMin:  ep.RewardMin,
		EpisodeRewardMax:  ep.RewardMax,
		EpisodeLenMean:    ep.LenMean,
		TimeThisIterS:     iterTime.Seconds(),
		Learner: map[string]float64{
			"policy_loss":        stats.policyLoss,
			"vf_loss":            stats.vfLoss,
			"total_loss":         stats.totalLoss,
			"entropy":            stats.entropy,
			"kl":                 stats.kl,
			"kl_coeff":           klCoeffUsed,
			"cur_lr":             lr,
			"explained_variance": zeroIfNaN(explVar),
			"grad_gnorm":         stats.gradNorm,
		},
		Extra: map[string]float64{
			"sample_time_s":      sampleTime.Seconds(),
			"learn_time_s":       learnTime.Seconds(),
			"sample_steps_per_s": rllib.PerSecond(float64(b.Len()), sampleTime),
			"learn_steps_per_s":  rllib.PerSecond(learnerRows, learnTime),
			// The driver's work other than learning: putting the weights
			// into the object store (once per iteration), submitting the
			// workers' calls, joining their batches and merging filters.
			"driver_time_s":   driverTime.Seconds(),
			"driver_share":    rllib.PerSecond(driverTime.Seconds(), iterTime),
			"learner_threads": float64(a.learner.team.Size()),
		},
	}, nil
}

// updateKL adapts the KL coefficient as the original RLlib PPO did.
func (a *Agent) updateKL(kl float64) {
	switch {
	case kl > 2*a.Cfg.KLTarget:
		a.klCoeff *= 1.5
	case kl < 0.5*a.Cfg.KLTarget:
		a.klCoeff *= 0.5
	}
}

func zeroIfNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// shuffleRNG is the generator of iteration iter's minibatch shuffles.
func shuffleRNG(seed int64, iter int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x5eed5eed, uint64(iter)))
}

// ComputeAction implements rllib.Agent. It returns the policy's most likely
// action (the argmax for a Discrete space, the mean for a Box, clipped to
// its bounds), with the observation passed through the preprocessor and
// the observation filter (without updating it); ComputeActionSampled draws
// one instead. A recurrent policy (use_lstm) carries its state from call
// to call: call StartEpisode when a new episode starts.
func (a *Agent) ComputeAction(obs []float64) ([]float64, error) {
	return a.computeAction(obs, nil)
}

// ComputeActionSampled is ComputeAction with the action drawn from the
// policy's distribution using rng.
func (a *Agent) ComputeActionSampled(obs []float64, rng *rand.Rand) ([]float64, error) {
	if rng == nil {
		return nil, errors.New("PPO: ComputeActionSampled needs a random generator")
	}
	return a.computeAction(obs, rng)
}

func (a *Agent) computeAction(obs []float64, rng *rand.Rand) ([]float64, error) {
	row := a.actor.Obs(a.proc.Size())
	if err := a.proc.ProcessStream(computeStream, false, row, obs, false); err != nil {
		return nil, fmt.Errorf("PPO: ComputeAction: %w", err)
	}
	// A Gaussian's mean or sample may leave a Box: the actor clips it.
	action, err := a.actor.Act(a.pol, row, rng)
	if err != nil {
		return nil, fmt.Errorf("PPO: ComputeAction: %w", err)
	}
	return action, nil
}

// computeStream is the preprocessor history ComputeAction uses (rollout
// workers use 0..num_envs_per_worker-1).
const computeStream = -1

// StartEpisode implements rllib.EpisodeStarter: the next ComputeAction
// observation starts an episode, from the recurrent policy's zero state
// (use_lstm) and with no frame history (a model config that stacks or
// differences frames).
func (a *Agent) StartEpisode() {
	a.actor.Reset()
	if sp, ok := a.proc.pre.(models.StreamPreprocessor); ok {
		sp.ResetStream(computeStream)
	}
}

// Stop implements rllib.Agent: it stops the rollout workers and releases
// the models' outside resources (a model plugin's processes).
func (a *Agent) Stop() error {
	var errs []error
	if a.samplers != nil {
		errs = append(errs, a.samplers.close())
		a.samplers = nil
	}
	if a.learner != nil {
		errs = append(errs, a.stopLearner())
	}
	return errors.Join(errs...)
}

// stopLearner stops the GPU learner actor, if any, and releases the
// models. Closing twice is harmless: a closed model's Close does nothing.
func (a *Agent) stopLearner() error {
	var errs []error
	if a.gpu != nil {
		errs = append(errs, a.gpu.close())
		a.gpu = nil
	}
	return errors.Join(append(errs, a.learner.close(), a.pol.Close())...)
}

// localSampler samples in the driver with the learner's own policy and
// filter (num_workers 0).
type localSampler struct{ w *RolloutWorker }

func (s *localSampler) sample(ctx context.Context, a *Agent) ([]Samples, time.Duration, error) {
	p, err := s.w.sample(ctx, a.iteration+1)
	if err != nil {
		return nil, 0, err
	}
	return []Samples{p}, 0, nil
}

// prefetch does nothing: Validate refuses sample_async without workers.
func (s *localSampler) prefetch(context.Context, *Agent) error { return nil }

func (s *localSampler) recycle(b sample.Batch) { s.w.worker.Recycle(b) }

func (s *localSampler) close() error { return s.w.Close() }

func newLocalSampler(ctx context.Context, a *Agent) (*localSampler, error) {
	// The learner's team steps the environments while it has no minibatch
	// to learn from: sampling and learning take turns on its goroutines.
	w, err := newRolloutWorker(a.WorkerSpec(0), a.pol, a.proc, a.learner.team)
	if err != nil {
		return nil, fmt.Errorf("PPO: %w", err)
	}
	return &localSampler{w: w}, nil
}

// weights is the state every remote worker receives each iteration.
func (a *Agent) weights() Weights {
	return Weights{Params: a.pol.Params.GetFlat(nil), Filter: a.proc.stats()}
}

var _ rllib.Agent = (*Agent)(nil)

// joinBatches is sample.Concat, except that a single batch is validated
// and used as it is: copying it would double the memory traffic of image
// observations (50 MB a batch for 2,048 frames of 40×40×2 values). A
// rollout worker's batch may then be read-only memory of the object store
// (its reference is held until recycle), which the learner only reads:
// the columns written from here on, advantages and value targets, are
// dropped so that ComputeGAE allocates them afresh.
func joinBatches(batches []sample.Batch, owned bool) (sample.Batch, error) {
	if len(batches) != 1 {
		return sample.Concat(batches...)
	}
	b := batches[0]
	if err := b.Validate(); err != nil {
		return sample.Batch{}, fmt.Errorf("sample: concat batch 0: %w", err)
	}
	if !owned {
		b.Advantages, b.ValueTargets = nil, nil
	}
	return b, nil
}
