package a3c

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
	"github.com/gray-ml/gray/rllib/schedule"
)

func init() { rllib.Register(rllib.Define("A3C", DefaultConfig, New)) }

// Agent is an A3C agent. It implements rllib.Agent.
type Agent struct {
	rllib.Base[Config]
	// pol holds the master weights; opt is the driver's Adam, which team
	// (num_learner_threads goroutines) runs.
	pol  *policy
	opt  *models.Adam
	team *models.Team
	lr   schedule.Piecewise

	// runners[i] is runner i+1; restarts[i] counts its replacements and
	// deaths[i] its deaths since its last gradient.
	runners  []gray.Handle[Runner]
	restarts []int
	deaths   []int
	// pending holds each runner's one outstanding gradient task.
	pending []gray.Ref[Gradient]
	// stale[i] marks runner i's outstanding task as computed from weights
	// that Restore replaced: its gradient is dropped.
	stale []bool
	// weights is the current weights in the object store: put once per
	// update, sent to every runner that starts a task before the next one.
	weights gray.Ref[[]float64]

	iteration    int
	timesteps    int64
	updates      int64
	restartTotal int
	window       *sample.EpisodeWindow
	stopped      bool
	// actor acts for ComputeAction, carrying a recurrent policy's state.
	actor rollout.Actor
}

// New creates an A3C agent for opts.Env with cfg (DefaultConfig with the
// user's keys over it), starts its runners and gives each its first task.
func New(ctx context.Context, opts rllib.Options, cfg Config) (*Agent, error) {
	base, obsSpace, actSpace, err := rllib.NewBase("A3C", opts, cfg)
	if err != nil {
		return nil, err
	}
	if !gray.IsInitialized() {
		return nil, errors.New("A3C: the runners are actors and need the gray runtime: call gray.Init first (the train command does)")
	}
	threads, err := rllib.LearnerThreads("A3C", cfg.NumLearnerThreads, cfg.NumWorkers)
	if err != nil {
		return nil, err
	}
	pol, err := newPolicy(opts.Env, obsSpace, actSpace, cfg.Model, base.Seed)
	if err != nil {
		return nil, fmt.Errorf("A3C: %w", err)
	}
	a := &Agent{
		Base: base, pol: pol, opt: models.NewAdam(cfg.LR),
		team: models.NewTeam(threads), lr: cfg.LearningRate(), actor: rollout.NewActor(actSpace),
		window:   sample.NewEpisodeWindow(cfg.MetricsSmoothingEpisodes),
		restarts: make([]int, cfg.NumWorkers), deaths: make([]int, cfg.NumWorkers),
	}
	if err := a.startRunners(ctx); err != nil {
		_ = a.Stop()
		return nil, err
	}
	if err := a.putWeights(ctx); err != nil {
		_ = a.Stop()
		return nil, err
	}
	a.pending = make([]gray.Ref[Gradient], cfg.NumWorkers)
	a.stale = make([]bool, cfg.NumWorkers)
	for i := range a.runners {
		a.submit(i)
	}
	return a, nil
}

func (a *Agent) spec(i int) RunnerSpec {
	return RunnerSpec{WorkerSpec: a.WorkerSpec(i + 1), Restart: a.restarts[i]}
}

// startRunners starts num_workers runner actors and waits until each
// answers (rllib.AwaitStarted): within runner_start_timeout_s for the
// first, and, since runners start together and the rest follow within
// moments unless they wait for a CPU, within min(10 s, half of it) for
// each next one.
func (a *Agent) startRunners(ctx context.Context) error {
	n := a.Cfg.NumWorkers
	if err := rllib.CheckWorkers("A3C", n, ""); err != nil {
		return err
	}
	pids := make([]gray.Ref[int], n)
	for i := range n {
		h, err := runnerActor.Remote(ctx, a.spec(i))
		if err != nil {
			return fmt.Errorf("A3C: starting runner %d: %w", i+1, err)
		}
		a.runners = append(a.runners, h)
		pids[i] = pidMethod.Remote(h)
	}
	timeout := time.Duration(a.Cfg.RunnerStartTimeoutS * float64(time.Second))
	return rllib.AwaitStarted(ctx, "A3C", "runner", pids, rllib.StartWait{First: timeout, Stall: min(10*time.Second, timeout/2)}, "")
}

// putWeights puts the current weights into the object store once.
func (a *Agent) putWeights(ctx context.Context) error {
	ref, err := gray.Put(ctx, a.pol.Params.GetFlat(nil))
	if err != nil {
		return fmt.Errorf("A3C: putting the weights: %w", err)
	}
	a.weights = ref
	return nil
}

// submit starts runner i's next gradient task with the current weights.
func (a *Agent) submit(i int) {
	a.pending[i] = gradientMethod.Remote(a.runners[i], a.weights)
	a.stale[i] = false
}

// replace swaps dead runner i for a fresh actor and gives it a task.
func (a *Agent) replace(ctx context.Context, i int, cause error) error {
	a.deaths[i]++
	if a.deaths[i] > a.Cfg.MaxRunnerRestarts {
		return fmt.Errorf("A3C: runner %d died %d times in a row (max_runner_restarts %d): %w", i+1, a.deaths[i], a.Cfg.MaxRunnerRestarts, cause)
	}
	_ = gray.Kill(a.runners[i]) // releases its CPU; it is dead already
	a.restarts[i]++
	a.restartTotal++
	h, err := runnerActor.Remote(ctx, a.spec(i))
	if err != nil {
		return fmt.Errorf("A3C: replacing dead runner %d: %w", i+1, err)
	}
	a.runners[i] = h
	a.submit(i)
	return nil
}

// Iteration implements rllib.Agent.
func (a *Agent) Iteration() int { return a.iteration }

// Weights returns a copy of the policy's flat weights.
func (a *Agent) Weights() []float64 { return a.pol.Params.GetFlat(nil) }

// RunnerPids returns each runner's process id.
func (a *Agent) RunnerPids(ctx context.Context) ([]int, error) {
	refs := make([]gray.Ref[int], len(a.runners))
	for i, h := range a.runners {
		refs[i] = pidMethod.Remote(h)
	}
	return gray.GetAll(ctx, refs)
}

// Train implements rllib.Agent: the loop of section 1.16. It waits for
// whichever runner finishes first, applies that gradient with Adam, puts
// the new weights into the object store once and starts that runner's next
// task with them, until updates_per_iter gradients are applied and
// min_iter_time_s has passed. A runner whose process died is replaced by a
// fresh actor and the loop goes on.
func (a *Agent) Train(ctx context.Context) (rllib.Result, error) {
	if a.stopped {
		return rllib.Result{}, errors.New("A3C: Train after Stop")
	}
	start := time.Now()
	iter := a.iteration + 1
	minTime := time.Duration(a.Cfg.MinIterTimeS * float64(time.Second))
	var (
		steps                   int64
		eps                     []sample.Episode
		pl, vl, ent, gn         float64
		updates, restartsBefore = 0, a.restartTotal
		waitTime, applyTime     time.Duration
		lr                      float64
	)
	for updates < a.Cfg.UpdatesPerIter || time.Since(start) < minTime {
		t0 := time.Now()
		ready, _, err := gray.Wait(ctx, a.pending, 1, 0)
		if err != nil {
			return rllib.Result{}, fmt.Errorf("A3C iteration %d: waiting for gradients: %w", iter, err)
		}
		i := slices.IndexFunc(a.pending, func(r gray.Ref[Gradient]) bool { return r.ID() == ready[0].ID() })
		g, err := gray.Get(ctx, a.pending[i])
		waitTime += time.Since(t0)
		if err != nil {
			if errors.Is(err, gray.ErrActorDead) {
				if err := a.replace(ctx, i, err); err != nil {
					return rllib.Result{}, fmt.Errorf("A3C iteration %d: %w", iter, err)
				}
				continue
			}
			a.submit(i) // keep one task per runner for the next call
			return rllib.Result{}, fmt.Errorf("A3C iteration %d: %w", iter, err)
		}
		a.deaths[i] = 0
		if a.stale[i] {
			a.submit(i)
			continue
		}
		t1 := time.Now()
		lr = a.lr.Value(a.timesteps)
		if err := a.apply(g.Grad, lr); err != nil {
			a.submit(i)
			return rllib.Result{}, fmt.Errorf("A3C iteration %d: runner %d's gradient: %w", iter, g.Index, err)
		}
		if err := a.putWeights(ctx); err != nil {
			return rllib.Result{}, fmt.Errorf("A3C iteration %d: %w", iter, err)
		}
		a.submit(i)
		applyTime += time.Since(t1)

		updates++
		a.updates++
		a.timesteps += int64(g.Steps)
		steps += int64(g.Steps)
		eps = append(eps, g.Episodes...)
		pl += g.PolicyLoss
		vl += g.VFLoss
		ent += g.Entropy
		gn += g.GradNorm
	}
	a.iteration = iter
	a.window.Add(eps...)
	st := a.window.Stats()
	u := float64(updates)
	elapsed := time.Since(start)
	return rllib.Result{
		TrainingIteration: a.iteration,
		TimestepsTotal:    a.timesteps,
		TimestepsThisIter: steps,
		EpisodesTotal:     a.window.Total(),
		EpisodesThisIter:  len(eps),
		EpisodeRewardMean: st.RewardMean,
		EpisodeRewardMin:  st.RewardMin,
		EpisodeRewardMax:  st.RewardMax,
		EpisodeLenMean:    st.LenMean,
		TimeThisIterS:     elapsed.Seconds(),
		Learner: map[string]float64{
			"policy_loss": pl / u,
			"vf_loss":     vl / u,
			"entropy":     ent / u,
			"grad_gnorm":  gn / u,
			"cur_lr":      lr,
			"num_updates": u,
		},
		Extra: map[string]float64{
			"num_updates_total":  float64(a.updates),
			"runner_restarts":    float64(a.restartTotal - restartsBefore),
			"wait_time_s":        waitTime.Seconds(),
			"apply_time_s":       applyTime.Seconds(),
			"learner_threads":    float64(a.team.Size()),
			"sample_steps_per_s": rllib.PerSecond(float64(steps), elapsed),
		},
	}, nil
}

// apply takes one Adam step with grad, refusing a gradient of the wrong
// size or with NaN or Inf (the weights stay as they were).
func (a *Agent) apply(grad []float64, lr float64) error {
	if len(grad) != a.pol.Params.Len() {
		return fmt.Errorf("has %d values, the model has %d weights", len(grad), a.pol.Params.Len())
	}
	if !a.team.AllFinite(grad) {
		j := slices.IndexFunc(grad, func(x float64) bool { return !rllib.Finite(x) })
		return fmt.Errorf("value %d is %v; weights kept", j, grad[j])
	}
	a.opt.LR = lr
	return a.opt.StepOn(a.team, a.pol.Params.Flat(), grad)
}

// ComputeAction implements rllib.Agent: the policy's most likely action
// (the argmax for a Discrete space, the mean for a Box, clipped to its
// bounds). A recurrent policy (use_lstm) carries its state from call to
// call: call StartEpisode when a new episode starts.
func (a *Agent) ComputeAction(obs []float64) ([]float64, error) {
	row := a.actor.Obs(a.pol.Size())
	if err := a.pol.Process(row, obs, false); err != nil {
		return nil, fmt.Errorf("A3C: ComputeAction: %w", err)
	}
	action, err := a.actor.Act(a.pol, row, nil)
	if err != nil {
		return nil, fmt.Errorf("A3C: ComputeAction: %w", err)
	}
	return action, nil
}

// StartEpisode implements rllib.EpisodeStarter: the next ComputeAction
// starts a new episode from the recurrent policy's zero state.
func (a *Agent) StartEpisode() { a.actor.Reset() }

// Stop implements rllib.Agent: it kills the runners (their outstanding
// gradients are dropped).
func (a *Agent) Stop() error {
	a.stopped = true
	err := rllib.KillWorkers(a.runners)
	a.runners, a.pending = nil, nil
	a.team.Close()
	return errors.Join(err, models.CloseActionDist(a.pol.Dist))
}

var _ rllib.Agent = (*Agent)(nil)
