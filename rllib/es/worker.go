package es

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// WorkerSpec is what a worker is built from; it travels to the worker's
// process as the actor's first constructor argument (the noise table is the
// second, by reference, kept as a gray.Shared).
type WorkerSpec = rllib.WorkerSpec[Config]

// Weights is what the driver puts into the object store once per
// iteration for every worker: the policy's flat weights θ and the master
// observation filter's statistics (nil without a filter).
type Weights struct {
	Params []float64
	Filter *models.RunningStat
}

// Task is one iteration's work for one worker.
type Task struct {
	Iteration int
	// MinEpisodes and MinTimesteps are this worker's share of the
	// iteration's stopping rule: it runs antithetic pairs until it has at
	// least this many perturbed episodes and steps.
	MinEpisodes  int
	MinTimesteps int
	// EvalEpisodes is the number of unperturbed episodes to run.
	EvalEpisodes int
}

// Rollouts is a worker's answer: for pair i, the episode with θ+σε and the
// one with θ−σε, where ε is the noise at NoiseIndices[i]; the evaluation
// episodes; and what its observation filter saw (nil without a filter).
type Rollouts struct {
	Worker       int
	NoiseIndices []int
	// EnvSeeds are the reset seeds, one per pair: both episodes of a pair
	// start from the same state.
	EnvSeeds    []int64
	ReturnsPos  []float64
	ReturnsNeg  []float64
	LengthsPos  []int
	LengthsNeg  []int
	EvalReturns []float64
	EvalLengths []int
	FilterDelta *models.RunningStat
}

// Worker runs ES episodes. It is the state of a worker actor; the driver
// also uses one directly when num_workers is 0.
type Worker struct {
	rllib.Stateless // its checkpoint is empty

	spec  WorkerSpec
	env   envs.Env
	pol   *models.Policy
	actor *actor
	noise noiseTable
	// shared holds the noise table's object for the worker's lifetime:
	// noise.data points into it.
	shared gray.Shared[[]float32]
	// theta holds the weights the iteration started from; the model's
	// own weights are overwritten with θ±σε for each episode.
	theta []float64
}

// NewWorker builds the worker's environment and policy. It keeps noise,
// the shared table, without copying it: in a worker actor every worker
// reads the one copy in the object store's shared memory, read-only
// (gray.SharedValue wraps a table made in this process).
func NewWorker(ctx context.Context, spec WorkerSpec, noise gray.Shared[[]float32]) (*Worker, error) {
	cfg := spec.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env, err := envs.Make(spec.Env, envs.Config(spec.EnvConfig))
	if err != nil {
		return nil, fmt.Errorf("ES worker %d: %w", spec.Index, err)
	}
	pol, box, err := newPolicy(spec.Env, env.ObservationSpace(), env.ActionSpace(), cfg, spec.Seed)
	if err != nil {
		_ = env.Close()
		return nil, fmt.Errorf("ES worker %d: %w", spec.Index, err)
	}
	w := &Worker{spec: spec, env: env, pol: pol, actor: newActor(pol, box), noise: noiseTable{noise.Value()}, shared: noise}
	if err := w.noise.checkFits(pol.Model.Params().Len()); err != nil {
		_ = env.Close()
		return nil, err
	}
	return w, nil
}

// filterClip bounds filtered observations, as RLlib's MeanStdFilter does.
const filterClip = 10

// newPolicy builds the deterministic policy for the spaces: logits whose
// argmax is the action for Discrete, the action itself for Box. The seed
// fixes the initial weights, so driver and workers build the same network.
func newPolicy(envName string, obs, act envs.Space, cfg Config, seed int64) (*models.Policy, *envs.Box, error) {
	dist := ""
	var box *envs.Box
	switch s := act.(type) {
	case envs.Discrete:
	case envs.Box:
		dist, box = models.DistDeterministic, &s
	default:
		return nil, nil, fmt.Errorf("ES supports Discrete and Box action spaces, not %v (%T)", act, act)
	}
	opts := cfg.Model
	opts.Value, opts.FreeLogStd = false, false
	pol, err := models.NewPolicy(envName, obs, act, dist, opts, uint64(seed))
	if err != nil {
		return nil, nil, err
	}
	switch cfg.ObservationFilter {
	case "MeanStdFilter":
		pol.Filter = models.NewMeanStdFilter(pol.Preprocessor.Size(), filterClip)
	case "NoFilter":
	default:
		return nil, nil, fmt.Errorf("unknown observation_filter %q", cfg.ObservationFilter)
	}
	return pol, box, nil
}

// actor is the policy's deterministic forward pass for one observation at
// a time, with the tape and rows it reuses from call to call: each worker
// acts with one, and the agent's ComputeAction with another.
type actor struct {
	pol         *models.Policy
	box         *envs.Box // the action space when it is a Box
	tape        *models.Tape
	obs, action []float64
}

func newActor(pol *models.Policy, box *envs.Box) *actor {
	tape := models.NewTape()
	tape.SetNoGrad(true)
	return &actor{pol: pol, box: box, tape: tape}
}

// act computes the policy's deterministic action for one raw observation.
// update adds the observation to the filter's statistics; noiseRNG, when
// set, adds action noise of standard deviation noiseStd to a Box action.
// The returned slice is overwritten by the next call.
func (a *actor) act(raw []float64, update bool, noiseStd float64, noiseRNG *rand.Rand) ([]float64, error) {
	pol := a.pol
	size := pol.Preprocessor.Size()
	a.obs = sample.Resize(a.obs, size)
	if err := pol.Preprocessor.Transform(raw, a.obs); err != nil {
		return nil, err
	}
	if pol.Filter != nil {
		if err := pol.Filter.Apply(a.obs, update); err != nil {
			return nil, err
		}
	}
	a.tape.Reset()
	out := pol.Model.Forward(a.tape, a.tape.Const(1, size, a.obs))
	a.action = sample.Resize(a.action, pol.Dist.ActionSize())
	if err := pol.Dist.Mode(out.Out.Data, a.action); err != nil {
		return nil, err
	}
	if a.box != nil {
		for i := range a.action {
			if noiseRNG != nil && noiseStd > 0 {
				a.action[i] += noiseStd * noiseRNG.NormFloat64()
			}
			a.action[i] = math.Min(math.Max(a.action[i], a.box.Low[i]), a.box.High[i])
		}
	}
	return a.action, nil
}

// episode runs one episode with the model's current weights from an
// environment reset with envSeed.
func (w *Worker) episode(ctx context.Context, envSeed int64, perturbed bool) (ret float64, length int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	var noiseRNG *rand.Rand
	if perturbed && w.actor.box != nil && w.spec.Config.ActionNoiseStd > 0 {
		// Seeded by the environment seed: both episodes of a pair see the
		// same action noise, as they see the same initial state.
		noiseRNG = rand.New(rand.NewPCG(uint64(envSeed), 0xac7))
	}
	obs, err := w.env.Reset(envSeed)
	if err != nil {
		return 0, 0, err
	}
	for {
		a, err := w.actor.act(obs, perturbed, w.spec.Config.ActionNoiseStd, noiseRNG)
		if err != nil {
			return 0, 0, fmt.Errorf("step %d: %w", length, err)
		}
		st, err := w.env.Step(a)
		if err != nil {
			return 0, 0, fmt.Errorf("step %d: %w", length, err)
		}
		ret += st.Reward
		length++
		if st.Done() {
			return ret, length, nil
		}
		obs = st.Obs
	}
}

// perturb sets the model's weights to θ + scale·ε.
func (w *Worker) perturb(eps []float32, scale float64) {
	flat := w.pol.Model.Params().Flat()
	for i, e := range eps {
		flat[i] = w.theta[i] + scale*float64(e)
	}
}

// Run sets θ and the filter, then runs the task's evaluation episodes and
// antithetic pairs. Offsets and environment seeds come from a generator
// seeded by the run's seed, the iteration and the worker's index, so a
// fixed worker count gives the same run, and a replacement worker redoing
// a dead one's task gives the same answer.
func (w *Worker) Run(ctx context.Context, weights Weights, task Task) (Rollouts, error) {
	params := w.pol.Model.Params()
	if err := params.SetFlat(weights.Params); err != nil {
		return Rollouts{}, fmt.Errorf("ES worker %d: %w", w.spec.Index, err)
	}
	w.theta = params.GetFlat(w.theta)
	if err := setFilter(w.pol, weights.Filter); err != nil {
		return Rollouts{}, fmt.Errorf("ES worker %d: %w", w.spec.Index, err)
	}
	out, err := w.run(ctx, task)
	// Leave θ in the model whatever happened.
	_ = params.SetFlat(w.theta)
	if err != nil {
		return Rollouts{}, fmt.Errorf("ES worker %d, iteration %d: %w", w.spec.Index, task.Iteration, err)
	}
	if w.pol.Filter != nil {
		d := w.pol.Filter.TakeDelta()
		out.FilterDelta = &d
	}
	return out, nil
}

func (w *Worker) run(ctx context.Context, task Task) (Rollouts, error) {
	cfg := w.spec.Config
	rng := rand.New(rand.NewPCG(uint64(w.spec.Seed), uint64(task.Iteration)<<16|uint64(w.spec.Index)))
	out := Rollouts{Worker: w.spec.Index}
	params := w.pol.Model.Params()
	evaluate := func() error {
		_ = params.SetFlat(w.theta)
		r, l, err := w.episode(ctx, rng.Int64(), false)
		out.EvalReturns, out.EvalLengths = append(out.EvalReturns, r), append(out.EvalLengths, l)
		return err
	}
	for range task.EvalEpisodes {
		if err := evaluate(); err != nil {
			return out, err
		}
	}
	dim := params.Len()
	steps := 0
	for 2*len(out.NoiseIndices) < task.MinEpisodes || steps < task.MinTimesteps {
		if cfg.EvalProb > 0 && rng.Float64() < cfg.EvalProb {
			if err := evaluate(); err != nil {
				return out, err
			}
		}
		idx := w.noise.sampleIndex(rng, dim)
		eps := w.noise.get(idx, dim)
		envSeed := rng.Int64()
		w.perturb(eps, cfg.NoiseStdev)
		rPos, lPos, err := w.episode(ctx, envSeed, true)
		if err != nil {
			return out, err
		}
		w.perturb(eps, -cfg.NoiseStdev)
		rNeg, lNeg, err := w.episode(ctx, envSeed, true)
		if err != nil {
			return out, err
		}
		out.NoiseIndices = append(out.NoiseIndices, idx)
		out.EnvSeeds = append(out.EnvSeeds, envSeed)
		out.ReturnsPos, out.ReturnsNeg = append(out.ReturnsPos, rPos), append(out.ReturnsNeg, rNeg)
		out.LengthsPos, out.LengthsNeg = append(out.LengthsPos, lPos), append(out.LengthsNeg, lNeg)
		steps += lPos + lNeg
	}
	return out, nil
}

// setFilter replaces the policy's filter statistics (nil: nothing to do).
func setFilter(pol *models.Policy, s *models.RunningStat) error {
	switch {
	case s == nil && pol.Filter == nil:
		return nil
	case s == nil:
		return fmt.Errorf("observation filter statistics missing")
	case pol.Filter == nil:
		return fmt.Errorf("observation filter statistics given, but observation_filter is NoFilter")
	}
	return pol.Filter.SetStats(*s)
}

// Close releases the worker's environment.
func (w *Worker) Close() error { return w.env.Close() }

// WorkerInfo describes a worker process and where its noise table lives.
type WorkerInfo struct {
	PID int
	// NoiseLen is the number of values in the worker's noise table.
	NoiseLen int
	// NoiseMapping is the line of /proc/self/maps holding the table's first
	// value ("" where that file does not exist); NoiseShared reports that
	// the line is a shared mapping of a file (the object store's), not
	// private heap memory.
	NoiseMapping string
	NoiseShared  bool
}

// Info reports the worker's process ID and where its noise table lives:
// a test checks that every worker reads the same shared memory.
func (w *Worker) Info(ctx context.Context) (WorkerInfo, error) {
	info := WorkerInfo{PID: os.Getpid(), NoiseLen: len(w.noise.data)}
	if len(w.noise.data) > 0 {
		info.NoiseMapping, info.NoiseShared = mappingOf(uintptr(unsafe.Pointer(&w.noise.data[0])))
	}
	return info, nil
}

// mappingOf finds the line of /proc/self/maps whose range holds addr and
// reports whether it is a shared file mapping.
func mappingOf(addr uintptr) (line string, shared bool) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || uint64(addr) < start || uint64(addr) >= end {
			continue
		}
		// perms like "r--s": the fourth letter is s for a shared mapping;
		// field 6 names the file (anonymous memory has none).
		shared = len(fields[1]) == 4 && fields[1][3] == 's' && len(fields) >= 6 && strings.HasPrefix(fields[5], "/")
		return sc.Text(), shared
	}
	return "", false
}
