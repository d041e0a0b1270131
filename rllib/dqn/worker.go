package dqn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/replay"
	"github.com/gray-ml/gray/rllib/rollout"
	"github.com/gray-ml/gray/rllib/sample"
	"github.com/gray-ml/gray/rllib/schedule"
)

// WorkerSpec is what a rollout worker is built from.
type WorkerSpec = rllib.WorkerSpec[Config]

// SampleRequest asks a worker for one training round's steps.
type SampleRequest struct {
	// Round numbers the request; with the seed and the worker's index it
	// seeds the exploration randomness, so a run is reproducible.
	Round int64
	// Steps is the number of vector steps to take.
	Steps int
	// Timestep is the run's step count when the round starts and Stride
	// the number of run steps one vector step of this worker stands for;
	// ε at vector step k is the schedule's value at Timestep + k·Stride.
	Timestep int64
	Stride   int
}

// Samples is a worker's answer: n-step transitions ready for the replay
// buffer, the episodes that ended, and the environment steps taken.
type Samples struct {
	Transitions replay.Transitions
	Episodes    []sample.Episode
	Steps       int
}

// RolloutWorker steps environments with ε-greedy actions from its copy of
// the Q network and assembles n-step transitions. It is the state of a
// rollout worker actor; the driver also uses one directly when
// num_workers is 0, sharing the learner's network.
type RolloutWorker struct {
	rllib.Stateless // its checkpoint is empty

	spec    WorkerSpec
	vec     envs.Vector
	pre     models.Preprocessor
	q       *qNetwork
	eps     schedule.Piecewise
	nsteps  []*replay.NStep
	obsDim  int
	obs     []float64 // current processed observation of every environment
	next    []float64 // one processed next observation
	act     []float64
	actions [][]float64
	step    envs.VectorStep
	epRew   []float64
	epLen   []int
}

// NewRolloutWorker builds the worker's environments and Q network.
func NewRolloutWorker(ctx context.Context, spec WorkerSpec) (*RolloutWorker, error) {
	return newRolloutWorker(spec, nil)
}

// newRolloutWorker builds a worker; with q given it acts with that
// network (the driver's local sampler shares the learner's).
func newRolloutWorker(spec WorkerSpec, q *qNetwork) (*RolloutWorker, error) {
	return rllib.BuildWorker("DQN worker", spec, spec.Config.NumEnvsPerWorker, func(vec envs.Vector) (*RolloutWorker, error) {
		return buildRolloutWorker(spec, vec, q)
	})
}

// buildRolloutWorker builds a worker on its environments vec.
func buildRolloutWorker(spec WorkerSpec, vec envs.Vector, q *qNetwork) (*RolloutWorker, error) {
	cfg := &spec.Config
	nActions, err := discreteActions(vec.ActionSpace(), spec.Env)
	if err != nil {
		return nil, err
	}
	pre, err := models.GetPreprocessor(spec.Env, vec.ObservationSpace(), nil)
	if err != nil {
		return nil, err
	}
	if q == nil {
		if q, err = newQNetwork(pre.Shape(), nActions, cfg.Model, cfg.Dueling, spec.Seed); err != nil {
			return nil, err
		}
	}
	n, od := vec.NumEnvs(), pre.Size()
	w := &RolloutWorker{
		spec: spec, vec: vec, pre: pre, q: q, eps: cfg.epsilonSchedule(), obsDim: od,
		obs: make([]float64, n*od), next: make([]float64, od), act: make([]float64, n),
		actions: make([][]float64, n), epRew: make([]float64, n), epLen: make([]int, n),
	}
	for i := range n {
		w.actions[i] = make([]float64, 1)
		ns, err := replay.NewNStep(cfg.NStep, cfg.Gamma, od, 1)
		if err != nil {
			return nil, err
		}
		w.nsteps = append(w.nsteps, ns)
	}
	raw, err := vec.Reset(rollout.EnvSeeds(spec.Seed, spec.Index, n))
	if err != nil {
		return nil, fmt.Errorf("resetting %q: %w", spec.Env, err)
	}
	for i, o := range raw {
		if err := pre.Transform(o, w.row(i)); err != nil {
			return nil, fmt.Errorf("first observation of environment %d: %w", i, err)
		}
	}
	return w, nil
}

func (w *RolloutWorker) row(i int) []float64 { return w.obs[i*w.obsDim : (i+1)*w.obsDim] }

// Sample loads weights (the driver puts them into the object store once
// per round and every worker reads the same object) and takes one round's
// steps.
func (w *RolloutWorker) Sample(ctx context.Context, weights []float64, req SampleRequest) (Samples, error) {
	if err := w.q.params.SetFlat(weights); err != nil {
		return Samples{}, fmt.Errorf("DQN worker %d: %w", w.spec.Index, err)
	}
	return w.sample(ctx, req)
}

// sample steps every environment req.Steps times with ε-greedy actions.
func (w *RolloutWorker) sample(ctx context.Context, req SampleRequest) (Samples, error) {
	n := w.vec.NumEnvs()
	out := Samples{Transitions: replay.Transitions{ObsDim: w.obsDim, ActDim: 1}}
	rng := rand.New(rand.NewPCG(uint64(w.spec.Seed), uint64(req.Round)<<16|uint64(w.spec.Index)))
	for k := range req.Steps {
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return Samples{}, fmt.Errorf("DQN worker %d: sampling interrupted: %w", w.spec.Index, err)
			}
		}
		eps := w.eps.Value(req.Timestep + int64(k*req.Stride))
		w.q.act(w.obs, n, eps, rng, w.act)
		for i := range n {
			w.actions[i][0] = w.act[i]
		}
		if err := w.stepEnvs(); err != nil {
			return Samples{}, fmt.Errorf("DQN worker %d: stepping %q: %w", w.spec.Index, w.spec.Env, err)
		}
		st := &w.step
		for i := range n {
			rew := st.Rewards[i]
			if math.IsNaN(rew) || math.IsInf(rew, 0) {
				return Samples{}, fmt.Errorf("DQN worker %d: %q environment %d returned reward %v", w.spec.Index, w.spec.Env, i, rew)
			}
			done := st.Terminated[i] || st.Truncated[i]
			// The transition's next observation is the episode's last one
			// when it ended; the Vector has already reset the environment.
			nextRaw := st.Obs[i]
			if done {
				if st.FinalObs == nil || st.FinalObs[i] == nil {
					return Samples{}, fmt.Errorf("DQN worker %d: an episode of %q ended without its final observation", w.spec.Index, w.spec.Env)
				}
				nextRaw = st.FinalObs[i]
			}
			if err := w.pre.Transform(nextRaw, w.next); err != nil {
				return Samples{}, fmt.Errorf("DQN worker %d: observation of environment %d: %w", w.spec.Index, i, err)
			}
			w.nsteps[i].Add(w.row(i), w.actions[i], rew, w.next, st.Terminated[i], st.Truncated[i] && !st.Terminated[i], &out.Transitions)
			w.epRew[i] += rew
			w.epLen[i]++
			if done {
				out.Episodes = append(out.Episodes, sample.Episode{Reward: w.epRew[i], Length: w.epLen[i]})
				w.epRew[i], w.epLen[i] = 0, 0
				if err := w.pre.Transform(st.Obs[i], w.row(i)); err != nil {
					return Samples{}, fmt.Errorf("DQN worker %d: first observation of environment %d: %w", w.spec.Index, i, err)
				}
			} else {
				copy(w.row(i), w.next)
			}
		}
		out.Steps += n
	}
	return out, nil
}

// stepEnvs steps the Vector, without allocating when it supports that.
func (w *RolloutWorker) stepEnvs() error {
	if s, ok := w.vec.(envs.InPlaceStepper); ok {
		return s.StepInto(w.actions, &w.step)
	}
	st, err := w.vec.Step(w.actions)
	w.step = st
	return err
}

// Close releases the worker's environments.
func (w *RolloutWorker) Close() error { return w.vec.Close() }
