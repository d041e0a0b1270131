// Package rollout holds the rollout worker shared by on-policy algorithms:
// it steps an envs.Vector with a policy and returns sample batches. It is a
// plain Go type; algorithms wrap it in an actor to run it in a worker
// process, or call it directly in the driver (RLlib's local worker). The
// policy PPO and A3C share, an actor-critic over the model catalog, is
// here too (ActorCritic), and the Actor that acts for an agent's
// ComputeAction.
package rollout

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib/sample"
)

// Policy is what a rollout worker needs from a policy.
type Policy interface {
	// DistDim is the width of one row of distribution inputs (0 if the
	// policy reports none).
	DistDim() int
	// Act computes actions for n observations (rows of obs), drawing any
	// randomness from rng, and fills out.
	Act(obs []float64, n int, rng *rand.Rand, out *Actions) error
	// Values fills vals[:n] with value estimates of n observations.
	Values(obs []float64, n int, vals []float64) error
}

// Recurrent is a Policy that carries state from step to step (an LSTM
// policy). The worker keeps one state row per sub-environment, zeroes it
// when an episode ends, and cuts its batches into sequences of at most
// Config.MaxSeqLen steps, each stored with its initial state.
type Recurrent interface {
	Policy
	// StateSize is the number of state values per environment; 0 means
	// the policy is feed-forward after all.
	StateSize() int
	// ActRecurrent is Act from state (n rows of StateSize values), writing
	// the state after the step into out.State.
	ActRecurrent(obs, state []float64, n int, rng *rand.Rand, out *Actions) error
	// ValuesRecurrent is Values from state.
	ValuesRecurrent(obs, state []float64, n int, vals []float64) error
}

// Actions is a policy's output for n observations. Act resizes the slices;
// the worker reuses them across steps.
type Actions struct {
	// Actions has n rows of the action width (a Discrete action is one
	// value, its index).
	Actions []float64
	// Logp, VPreds and DistInputs may be left empty by policies that do not
	// compute them.
	Logp       []float64
	VPreds     []float64
	DistInputs []float64
	// State is a recurrent policy's state after the step, n rows.
	State []float64
}

// ObsProcessor turns raw observations into what the policy sees
// (preprocessing, then an optional running filter).
type ObsProcessor interface {
	// Size is the width of a processed observation.
	Size() int
	// Process writes the processed form of raw into dst; update says whether
	// a running filter may learn from raw. An observation it cannot process
	// (wrong size, NaN) is an error.
	Process(dst, raw []float64, update bool) error
}

// StreamProcessor is implemented by ObsProcessors whose output depends on
// the earlier observations of an episode (frame stacking, frame
// differencing). The worker then calls ProcessStream with the index of the
// sub-environment the observation comes from and whether it starts an
// episode, instead of Process.
type StreamProcessor interface {
	ProcessStream(stream int, start bool, dst, raw []float64, update bool) error
}

// Config configures a Worker.
type Config struct {
	// Env and EnvConfig name the environment.
	Env       string
	EnvConfig envs.Config
	// NumEnvs is the number of sub-environments stepped together.
	NumEnvs int
	// FragmentLength is the number of steps of each sub-environment per
	// Sample call, so a batch holds NumEnvs*FragmentLength rows.
	FragmentLength int
	// Seed and Index make the worker's environments and action sampling
	// reproducible and distinct from other workers'.
	Seed  int64
	Index int
	// MaxSeqLen is the longest sequence a recurrent policy's batches are
	// cut into (model.max_seq_len); ignored for feed-forward policies.
	MaxSeqLen int
	// Runner, when set, steps and preprocesses the sub-environments in
	// parts on its goroutines, where the Vector and the ObsProcessor allow
	// it (envs.RangeStepper, PartProcessor); results are the same as
	// without it.
	Runner Runner
}

// Worker steps a Vector of environments with a policy. Episodes run on
// across Sample calls. It is not safe for concurrent use.
type Worker struct {
	cfg    Config
	vec    envs.Vector
	policy Policy
	proc   ObsProcessor
	obsDim int
	actDim int
	box    *envs.Box
	// obs holds the current processed observation of every sub-environment.
	obs     []float64
	out     Actions
	actions [][]float64
	epRew   []float64
	epLen   []int
	// step is reused across steps when the Vector steps in place.
	step envs.VectorStep
	// rec is the policy when it is recurrent, with stateDim values of
	// state per sub-environment in state; seqLen is how many steps each
	// sub-environment's current sequence has.
	rec      Recurrent
	stateDim int
	state    []float64
	seqLen   []int
	// spareObs is the observation buffer of a batch handed back with
	// Recycle, for the next Sample to fill.
	spareObs []float64

	// How each step's per-environment work runs (setParts): rs is the
	// Vector when it steps ranges of sub-environments, split the processor
	// when it transforms streams apart from its filter, frames whether
	// observations come as 8-bit frames, parts how many groups of
	// sub-environments runner runs at once. finalBuf holds truncated
	// episodes' preprocessed final observations, errs each
	// sub-environment's error in the last step.
	rs       envs.RangeStepper
	split    PartProcessor
	frames   bool
	runner   Runner
	parts    int
	finalBuf []float64
	errs     []error
}

// New creates the worker's environments and resets them with seeds derived
// from cfg.Seed and cfg.Index.
func New(cfg Config, policy Policy, proc ObsProcessor) (*Worker, error) {
	if cfg.NumEnvs < 1 || cfg.FragmentLength < 1 {
		return nil, fmt.Errorf("rollout: need at least one environment and one step per fragment, got %d and %d", cfg.NumEnvs, cfg.FragmentLength)
	}
	vec, err := envs.MakeVector(cfg.Env, cfg.EnvConfig, cfg.NumEnvs)
	if err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	w, err := NewWithVector(cfg, vec, policy, proc)
	if err != nil {
		_ = vec.Close()
		return nil, err
	}
	return w, nil
}

// NewWithVector is New with an existing Vector, which the worker then owns.
func NewWithVector(cfg Config, vec envs.Vector, policy Policy, proc ObsProcessor) (*Worker, error) {
	cfg.NumEnvs = vec.NumEnvs()
	w := &Worker{cfg: cfg, vec: vec, policy: policy, proc: proc, obsDim: proc.Size()}
	switch s := vec.ActionSpace().(type) {
	case envs.Discrete:
		w.actDim = 1
	case envs.Box:
		w.actDim = s.Size()
		w.box = &s
	default:
		return nil, fmt.Errorf("rollout: unsupported action space %v", vec.ActionSpace())
	}
	n := cfg.NumEnvs
	if r, ok := policy.(Recurrent); ok && r.StateSize() > 0 {
		if cfg.MaxSeqLen < 1 {
			return nil, fmt.Errorf("rollout: a recurrent policy needs max_seq_len of at least 1, got %d", cfg.MaxSeqLen)
		}
		w.rec, w.stateDim = r, r.StateSize()
		w.state = make([]float64, n*w.stateDim)
		w.seqLen = make([]int, n)
	}
	w.obs = make([]float64, n*w.obsDim)
	w.actions = make([][]float64, n)
	for i := range w.actions {
		w.actions[i] = make([]float64, w.actDim)
	}
	w.epRew = make([]float64, n)
	w.epLen = make([]int, n)
	w.setParts(cfg.Runner)
	raw, err := vec.Reset(EnvSeeds(cfg.Seed, cfg.Index, n))
	if err != nil {
		return nil, fmt.Errorf("rollout: resetting %q: %w", cfg.Env, err)
	}
	for i, o := range raw {
		if err := w.process(i, true, w.row(i), o, true); err != nil {
			return nil, fmt.Errorf("rollout: first observation of %q sub-environment %d: %w", cfg.Env, i, err)
		}
	}
	return w, nil
}

// EnvSeeds are the reset seeds of worker index's n environments in a run
// of seed: distinct for every worker and environment, and the same in
// every run of that seed.
func EnvSeeds(seed int64, index, n int) []int64 {
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = seed*1_000_003 + int64(index*n+i)*7919
	}
	return seeds
}

func (w *Worker) row(i int) []float64 { return w.obs[i*w.obsDim : (i+1)*w.obsDim] }

func (w *Worker) stateRow(i int) []float64 {
	return w.state[i*w.stateDim : (i+1)*w.stateDim]
}

// ObsDim and ActDim are the widths of processed observations and actions.
func (w *Worker) ObsDim() int { return w.obsDim }

// ActDim is the width of one action row.
func (w *Worker) ActDim() int { return w.actDim }

// Recycle hands back a batch this worker sampled, once the caller is done
// with it: the next Sample fills its observation buffer instead of
// allocating one. For image observations that buffer is tens of
// megabytes, which a fresh allocation must also fault into memory page by
// page. The caller must not use b's observations afterwards.
func (w *Worker) Recycle(b sample.Batch) { w.spareObs = b.Obs }

// takeObs returns an observation buffer of n values (every one of which
// Sample overwrites): the recycled one when it is large enough.
func (w *Worker) takeObs(n int) []float64 {
	spare := w.spareObs
	w.spareObs = nil
	if cap(spare) >= n {
		return spare[:n]
	}
	return make([]float64, n)
}

// Sample steps every sub-environment FragmentLength times, drawing action
// randomness from rng, and returns the steps as one batch of NumEnvs
// fragments (rows env-major). It fills Bootstrap for truncated episodes
// from the value of their final observation and for fragments cut mid-
// episode from the value of the next observation. With a recurrent policy
// it carries each sub-environment's state from step to step (and across
// calls), zeroes it when an episode ends, and cuts the batch into
// sequences (Batch.SeqLens, Batch.StateIn).
func (w *Worker) Sample(ctx context.Context, rng *rand.Rand) (sample.Batch, error) {
	n, T := w.cfg.NumEnvs, w.cfg.FragmentLength
	rows := n * T
	distDim := w.policy.DistDim()
	b := sample.Batch{
		ObsDim: w.obsDim, ActDim: w.actDim, DistDim: distDim,
		Obs:        w.takeObs(rows * w.obsDim),
		Actions:    make([]float64, rows*w.actDim),
		Rewards:    make([]float64, rows),
		Terminated: make([]bool, rows),
		Truncated:  make([]bool, rows),
		Boundary:   make([]bool, rows),
		Bootstrap:  make([]float64, rows),
	}
	finalObs := make([]float64, 0, n*w.obsDim)
	finalState := make([]float64, 0, n*w.stateDim)
	var truncRows []int
	// Each sub-environment's sequences, joined in row order at the end.
	var seqLens [][]int
	var stateIn [][]float64
	if w.rec != nil {
		seqLens, stateIn = make([][]int, n), make([][]float64, n)
	}
	for t := 0; t < T; t++ {
		if t%64 == 0 {
			if err := ctx.Err(); err != nil {
				return sample.Batch{}, fmt.Errorf("rollout: sampling interrupted: %w", err)
			}
		}
		if w.rec != nil {
			w.startSeqs(t, seqLens, stateIn)
		}
		if err := w.act(n, rng); err != nil {
			return sample.Batch{}, fmt.Errorf("rollout: computing actions: %w", err)
		}
		if len(w.out.Actions) != n*w.actDim {
			return sample.Batch{}, fmt.Errorf("rollout: policy returned %d action values for %d environments of action width %d", len(w.out.Actions), n, w.actDim)
		}
		if t == 0 {
			if len(w.out.Logp) == n {
				b.Logp = make([]float64, rows)
			}
			if len(w.out.VPreds) == n {
				b.VPreds = make([]float64, rows)
			}
			if distDim > 0 && len(w.out.DistInputs) == n*distDim {
				b.DistInputs = make([]float64, rows*distDim)
			}
		}
		for i := 0; i < n; i++ {
			r := i*T + t
			a := w.out.Actions[i*w.actDim : (i+1)*w.actDim]
			copy(b.Actions[r*w.actDim:(r+1)*w.actDim], a)
			w.toEnvAction(w.actions[i], a)
			if b.Logp != nil {
				b.Logp[r] = w.out.Logp[i]
			}
			if b.VPreds != nil {
				b.VPreds[r] = w.out.VPreds[i]
			}
			if b.DistInputs != nil {
				copy(b.DistInputs[r*distDim:(r+1)*distDim], w.out.DistInputs[i*distDim:(i+1)*distDim])
			}
		}
		// The observations go into the batch, the environments step and
		// their next observations are preprocessed (in parts, when the
		// worker has them); the rest, in sub-environment order, here.
		if err := w.stepAll(&b, t); err != nil {
			return sample.Batch{}, err
		}
		step := w.step
		truncRows = truncRows[:0]
		finalObs = finalObs[:0]
		finalState = finalState[:0]
		for i := 0; i < n; i++ {
			r := i*T + t
			rew := step.Rewards[i]
			if math.IsNaN(rew) || math.IsInf(rew, 0) {
				return sample.Batch{}, fmt.Errorf("rollout: %q sub-environment %d returned reward %v", w.cfg.Env, i, rew)
			}
			b.Rewards[r] = rew
			b.Terminated[r] = step.Terminated[i]
			b.Truncated[r] = step.Truncated[i] && !step.Terminated[i]
			w.epRew[i] += rew
			w.epLen[i]++
			if step.Terminated[i] || step.Truncated[i] {
				b.Episodes = append(b.Episodes, sample.Episode{Reward: w.epRew[i], Length: w.epLen[i]})
				w.epRew[i], w.epLen[i] = 0, 0
				if b.Truncated[r] {
					truncRows = append(truncRows, r)
					if err := w.filter(w.finalRow(i), false); err != nil {
						return sample.Batch{}, fmt.Errorf("rollout: final observation of %q sub-environment %d: %w", w.cfg.Env, i, err)
					}
					finalObs = append(finalObs, w.finalRow(i)...)
					if w.rec != nil {
						finalState = append(finalState, w.stateRow(i)...)
					}
				}
				if w.rec != nil { // the next episode starts from the zero state
					clear(w.stateRow(i))
					w.seqLen[i] = 0
				}
			}
			if err := w.filter(w.row(i), true); err != nil {
				return sample.Batch{}, fmt.Errorf("rollout: observation of %q sub-environment %d: %w", w.cfg.Env, i, err)
			}
		}
		if len(truncRows) > 0 {
			if err := w.bootstrap(&b, truncRows, finalObs, finalState); err != nil {
				return sample.Batch{}, err
			}
		}
	}
	if w.rec != nil {
		b.StateDim = w.stateDim
		for i := range n {
			b.SeqLens = append(b.SeqLens, seqLens[i]...)
			b.StateIn = append(b.StateIn, stateIn[i]...)
		}
	}
	// Fragments cut mid-episode bootstrap from the next observation.
	var cut []int
	next := make([]float64, 0, n*w.obsDim)
	var nextState []float64
	for i := 0; i < n; i++ {
		r := i*T + T - 1
		b.Boundary[r] = true
		if !b.Terminated[r] && !b.Truncated[r] {
			cut = append(cut, r)
			next = append(next, w.row(i)...)
			if w.rec != nil {
				nextState = append(nextState, w.stateRow(i)...)
			}
		}
	}
	if len(cut) > 0 {
		if err := w.bootstrap(&b, cut, next, nextState); err != nil {
			return sample.Batch{}, err
		}
	}
	return b, nil
}

// startSeqs begins a new sequence for every sub-environment at step t of
// a fragment where one must begin: at the fragment's start, after an
// episode ended, and after MaxSeqLen steps. It records the sequence's
// initial state and counts step t into each current sequence.
func (w *Worker) startSeqs(t int, seqLens [][]int, stateIn [][]float64) {
	for i := range seqLens {
		if t == 0 || w.seqLen[i] == 0 || w.seqLen[i] == w.cfg.MaxSeqLen {
			seqLens[i] = append(seqLens[i], 0)
			stateIn[i] = append(stateIn[i], w.stateRow(i)...)
			w.seqLen[i] = 0
		}
		seqLens[i][len(seqLens[i])-1]++
		w.seqLen[i]++
	}
}

// act runs the policy on every sub-environment's observation, from and
// then into the carried state when the policy is recurrent.
func (w *Worker) act(n int, rng *rand.Rand) error {
	if w.rec == nil {
		return w.policy.Act(w.obs, n, rng, &w.out)
	}
	if err := w.rec.ActRecurrent(w.obs, w.state, n, rng, &w.out); err != nil {
		return err
	}
	if len(w.out.State) != len(w.state) {
		return fmt.Errorf("recurrent policy returned %d state values for %d environments of state size %d", len(w.out.State), n, w.stateDim)
	}
	copy(w.state, w.out.State)
	return nil
}

// process writes the processed form of raw, an observation of
// sub-environment i that starts an episode when start is set, into dst.
func (w *Worker) process(i int, start bool, dst, raw []float64, update bool) error {
	if sp, ok := w.proc.(StreamProcessor); ok {
		return sp.ProcessStream(i, start, dst, raw, update)
	}
	return w.proc.Process(dst, raw, update)
}

// filter applies a splitting processor's running filter to a row the
// parts preprocessed (a processor that does not split applied its own).
func (w *Worker) filter(dst []float64, update bool) error {
	if w.split == nil {
		return nil
	}
	return w.split.Filter(dst, update)
}

// stepEnvs steps the Vector, without allocating when it supports that.
func (w *Worker) stepEnvs() (envs.VectorStep, error) {
	if s, ok := w.vec.(envs.InPlaceStepper); ok {
		err := s.StepInto(w.actions, &w.step)
		return w.step, err
	}
	return w.vec.Step(w.actions)
}

// bootstrap fills b.Bootstrap at rows with the values of obs (one row
// each), seen from states when the policy is recurrent.
func (w *Worker) bootstrap(b *sample.Batch, rows []int, obs, states []float64) error {
	vals := make([]float64, len(rows))
	var err error
	if w.rec != nil {
		err = w.rec.ValuesRecurrent(obs, states, len(rows), vals)
	} else {
		err = w.policy.Values(obs, len(rows), vals)
	}
	if err != nil {
		return fmt.Errorf("rollout: value of the observation a trajectory was cut at: %w", err)
	}
	for k, r := range rows {
		b.Bootstrap[r] = vals[k]
	}
	return nil
}

// toEnvAction writes the action the environment receives: a Box action is
// clipped to its bounds (the batch keeps the unclipped sample, whose
// likelihood the policy computed).
func (w *Worker) toEnvAction(dst, a []float64) {
	copy(dst, a)
	if w.box == nil {
		return
	}
	for j := range dst {
		dst[j] = math.Min(math.Max(dst[j], w.box.Low[j]), w.box.High[j])
	}
}

// Close releases the environments.
func (w *Worker) Close() error { return w.vec.Close() }
