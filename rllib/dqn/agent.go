package dqn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/replay"
	"github.com/gray-ml/gray/rllib/sample"
	"github.com/gray-ml/gray/rllib/schedule"
)

func init() { rllib.Register(rllib.Define("DQN", DefaultConfig, New)) }

// Agent is a DQN agent. It implements rllib.Agent.
type Agent struct {
	rllib.Base[Config]
	// q is the online network the learner updates and target its delayed
	// copy; pre is the observation preprocessor.
	q, target *qNetwork
	pre       models.Preprocessor
	learner   *learner
	buf       *replay.Buffer
	eps, beta schedule.Piecewise
	lr        schedule.Piecewise
	samplers  samplers

	iteration int
	timesteps int64
	// rounds counts sampling rounds and gradSteps gradient steps since the
	// start of the run; lastTargetSync is the timestep of the last target
	// network update and targetUpdates their number.
	rounds          int64
	gradSteps       int64
	lastTargetSync  int64
	targetUpdates   int64
	workersReplaced int
	window          *sample.EpisodeWindow
	obsBuf, actBuf  []float64
}

// New creates a DQN agent for opts.Env with cfg (DefaultConfig with the
// user's keys over it).
// An environment whose actions are not Discrete is an error that names the
// algorithms that fit it.
func New(ctx context.Context, opts rllib.Options, cfg Config) (*Agent, error) {
	base, obsSpace, actSpace, err := rllib.NewBase("DQN", opts, cfg)
	if err != nil {
		return nil, err
	}
	seed := base.Seed
	nActions, err := discreteActions(actSpace, opts.Env)
	if err != nil {
		return nil, err
	}
	pre, err := models.GetPreprocessor(opts.Env, obsSpace, nil)
	if err != nil {
		return nil, fmt.Errorf("DQN: %w", err)
	}
	a := &Agent{
		Base: base, pre: pre,
		eps: cfg.epsilonSchedule(), beta: cfg.betaSchedule(), lr: cfg.LearningRate(),
		window: sample.NewEpisodeWindow(cfg.MetricsSmoothingEpisodes),
	}
	if a.q, err = newQNetwork(pre.Shape(), nActions, cfg.Model, cfg.Dueling, seed); err != nil {
		return nil, fmt.Errorf("DQN: %w", err)
	}
	if a.target, err = newQNetwork(pre.Shape(), nActions, cfg.Model, cfg.Dueling, seed); err != nil {
		return nil, fmt.Errorf("DQN: %w", err)
	}
	threads, err := rllib.LearnerThreads("DQN", cfg.NumLearnerThreads, cfg.NumWorkers)
	if err != nil {
		return nil, err
	}
	a.learner, err = newLearner(&a.Cfg, a.q, a.target, threads, func() (*qNetwork, error) {
		return newQNetwork(pre.Shape(), nActions, cfg.Model, cfg.Dueling, seed)
	})
	if err != nil {
		return nil, fmt.Errorf("DQN: %w", err)
	}
	a.learner.syncTarget()
	if a.buf, err = replay.New(replay.Config{
		Capacity: cfg.BufferSize, ObsDim: pre.Size(), ActDim: 1,
		Prioritized: cfg.PrioritizedReplay, Alpha: cfg.PrioritizedReplayAlpha, Eps: cfg.PrioritizedReplayEps,
	}); err != nil {
		a.learner.close()
		return nil, fmt.Errorf("DQN: %w", err)
	}
	if a.samplers, err = newSamplers(ctx, a); err != nil {
		a.learner.close()
		return nil, err
	}
	return a, nil
}

// Iteration implements rllib.Agent.
func (a *Agent) Iteration() int { return a.iteration }

// Weights returns a copy of the online network's flat weights.
func (a *Agent) Weights() []float64 { return a.q.params.GetFlat(nil) }

// Epsilon is the exploration rate at the current timestep.
func (a *Agent) Epsilon() float64 { return a.eps.Value(a.timesteps) }

// sampleRequest is round's request to every sampler.
func (a *Agent) sampleRequest(round int64) SampleRequest {
	return SampleRequest{
		Round: round, Steps: a.Cfg.roundSteps(), Timestep: a.timesteps,
		Stride: a.Cfg.Samplers() * a.Cfg.NumEnvsPerWorker,
	}
}

// Train implements rllib.Agent: it repeats training rounds (sample
// train_freq steps into the replay buffer, then learn) until
// timesteps_per_iteration steps have been taken. On NaN or Inf in a loss,
// gradient or weight it returns an error naming the gradient step and
// restores the networks and optimizer to their state before the round.
func (a *Agent) Train(ctx context.Context) (rllib.Result, error) {
	if a.samplers == nil {
		return rllib.Result{}, fmt.Errorf("DQN: Train after Stop; create a new agent")
	}
	start := time.Now()
	iter := a.iteration + 1
	var steps int64
	var episodes []sample.Episode
	var sampleTime, learnTime time.Duration
	var acc stepStats
	var learned int
	rng := rand.New(rand.NewPCG(uint64(a.Seed)^0xd9e5eed, uint64(iter)))
	for steps < int64(a.Cfg.TimestepsPerIteration) {
		t0 := time.Now()
		a.rounds++
		parts, err := a.samplers.sample(ctx, a, a.rounds)
		if err != nil {
			return rllib.Result{}, fmt.Errorf("DQN iteration %d: sampling: %w", iter, err)
		}
		for i := range parts {
			if err := a.buf.Add(&parts[i].Transitions); err != nil {
				return rllib.Result{}, fmt.Errorf("DQN iteration %d: %w", iter, err)
			}
			steps += int64(parts[i].Steps)
			a.timesteps += int64(parts[i].Steps)
			episodes = append(episodes, parts[i].Episodes...)
		}
		sampleTime += time.Since(t0)
		if a.timesteps < int64(a.Cfg.LearningStarts) || a.buf.Len() < a.Cfg.TrainBatchSize {
			continue
		}
		t1 := time.Now()
		s, n, err := a.learnRound(rng)
		if err != nil {
			return rllib.Result{}, fmt.Errorf("DQN iteration %d: %w", iter, err)
		}
		acc.loss += s.loss
		acc.meanQ += s.meanQ
		acc.meanTD += s.meanTD
		acc.gradNorm += s.gradNorm
		learned += n
		learnTime += time.Since(t1)
	}
	a.iteration = iter
	a.window.Add(episodes...)
	ep := a.window.Stats()
	learnerStats := map[string]float64{
		"cur_lr": a.lr.Value(a.timesteps), "epsilon": a.Epsilon(), "buffer_size": float64(a.buf.Len()),
		"num_target_updates": float64(a.targetUpdates), "num_grad_steps": float64(a.gradSteps),
	}
	if a.buf.Prioritized() {
		learnerStats["beta"] = a.beta.Value(a.timesteps)
	}
	if learned > 0 {
		k := float64(learned)
		learnerStats["loss"] = acc.loss / k
		learnerStats["mean_q"] = acc.meanQ / k
		learnerStats["mean_td_error"] = acc.meanTD / k
		learnerStats["grad_gnorm"] = acc.gradNorm / k
	}
	return rllib.Result{
		TrainingIteration: a.iteration,
		TimestepsTotal:    a.timesteps,
		TimestepsThisIter: steps,
		EpisodesTotal:     a.window.Total(),
		EpisodesThisIter:  len(episodes),
		EpisodeRewardMean: ep.RewardMean,
		EpisodeRewardMin:  ep.RewardMin,
		EpisodeRewardMax:  ep.RewardMax,
		EpisodeLenMean:    ep.LenMean,
		TimeThisIterS:     time.Since(start).Seconds(),
		Learner:           learnerStats,
		Extra: map[string]float64{
			"sample_time_s":      sampleTime.Seconds(),
			"learn_time_s":       learnTime.Seconds(),
			"sample_steps_per_s": rllib.PerSecond(float64(steps), sampleTime),
			"learn_steps_per_s":  rllib.PerSecond(float64(learned*a.Cfg.TrainBatchSize), learnTime),
			"workers_replaced":   float64(a.workersReplaced),
		},
	}, nil
}

// learnRound syncs the target network when due and takes gradient_steps
// steps. It returns the mean statistics of the round's steps (summed over
// the caller's rounds, they average per step) as a sum over steps, and
// the number of steps. On a non-finite value it restores the networks and
// optimizer as they were before the round.
func (a *Agent) learnRound(rng *rand.Rand) (stepStats, int, error) {
	goodQ, goodTarget := a.q.params.GetFlat(nil), a.target.params.GetFlat(nil)
	goodOpt := a.learner.opt.State()
	goodSync, goodUpdates := a.lastTargetSync, a.targetUpdates
	if a.timesteps-a.lastTargetSync >= int64(a.Cfg.TargetNetworkUpdateFreq) {
		a.learner.syncTarget()
		a.lastTargetSync = a.timesteps
		a.targetUpdates++
	}
	beta := a.beta.Value(a.timesteps)
	a.learner.opt.LR = a.lr.Value(a.timesteps)
	var sum stepStats
	for k := range a.Cfg.GradientSteps {
		s, err := a.learner.step(a.buf, rng, beta)
		if err != nil {
			_ = a.q.params.SetFlat(goodQ)
			_ = a.target.params.SetFlat(goodTarget)
			_ = a.learner.opt.SetState(goodOpt)
			a.lastTargetSync, a.targetUpdates = goodSync, goodUpdates
			if ne, ok := err.(*nanError); ok {
				ne.step = a.gradSteps + int64(k) + 1
			}
			return stepStats{}, 0, fmt.Errorf("%w; weights and optimizer state kept from before this training round", err)
		}
		sum.loss += s.loss
		sum.meanQ += s.meanQ
		sum.meanTD += s.meanTD
		sum.gradNorm += s.gradNorm
	}
	a.gradSteps += int64(a.Cfg.GradientSteps)
	return sum, a.Cfg.GradientSteps, nil
}

// ComputeAction implements rllib.Agent: the greedy action, the argmax of
// the online network's Q-values.
func (a *Agent) ComputeAction(obs []float64) ([]float64, error) {
	a.obsBuf = sample.Resize(a.obsBuf, a.pre.Size())
	if err := a.pre.Transform(obs, a.obsBuf); err != nil {
		return nil, fmt.Errorf("DQN: ComputeAction: %w", err)
	}
	a.actBuf = sample.Resize(a.actBuf, 1)
	a.q.act(a.obsBuf, 1, 0, nil, a.actBuf)
	return []float64{a.actBuf[0]}, nil
}

// QValues returns the online network's Q-value of every action for one
// observation.
func (a *Agent) QValues(obs []float64) ([]float64, error) {
	a.obsBuf = sample.Resize(a.obsBuf, a.pre.Size())
	if err := a.pre.Transform(obs, a.obsBuf); err != nil {
		return nil, fmt.Errorf("DQN: QValues: %w", err)
	}
	return append([]float64(nil), a.q.values(a.obsBuf, 1)...), nil
}

// Stop implements rllib.Agent: it stops the samplers.
func (a *Agent) Stop() error {
	if a.samplers == nil {
		return nil
	}
	err := a.samplers.close()
	a.samplers = nil
	a.learner.close()
	return err
}

var _ rllib.Agent = (*Agent)(nil)
