package envs

import (
	"errors"
	"fmt"
)

// InPlaceStepper is implemented by Vectors that can step without allocating:
// the hot loop of a rollout worker calls StepInto instead of Step.
//
// StepInto fills out, reusing its Rewards, Terminated, Truncated, Obs and
// FinalObs slices when they already have length NumEnvs (allocating them
// once otherwise). The rows of out.Obs and out.FinalObs point into buffers
// the Vector owns; they stay valid until the next call to Step, StepInto or
// Reset, so copy what must outlive that. Everything else follows Step.
type InPlaceStepper interface {
	StepInto(actions [][]float64, out *VectorStep) error
}

// AutoResetSeed is the seed with which a Vector starts episode k (k ≥ 1 for
// the automatic resets after Reset) of a sub-environment that Reset seeded
// with seed. Mixing both through splitmix64 keeps the episodes of
// sub-environments seeded 0, 1, 2, ... distinct (a plain seed+k would make
// sub-environment 0's second episode repeat sub-environment 1's first).
// Natively batched Vectors (plugins) should use it too so that a run is
// reproducible from its seeds whatever serves the environment.
func AutoResetSeed(seed int64, k int) int64 {
	return int64(splitmix64(uint64(seed) ^ splitmix64(uint64(k))))
}

// serialVector steps n independent Env instances one after the other. When
// every sub-environment is a built-in one it uses their allocation-free
// fast path and keeps all observations in flat buffers. Like an Env, it is
// not safe for concurrent use: one rollout loop owns it.
type serialVector struct {
	name string
	envs []Env
	flat []flatEnv // the same environments when all have the fast path, else nil
	dim  int       // observation size of one sub-environment

	seeds    []int64 // seeds given to the last Reset
	episodes []int   // episodes begun per sub-environment since that Reset
	isReset  bool

	// StepInto's buffers: n rows of dim values each.
	obsBuf, finalBuf []float64
	// frames are the sub-environments when every one renders 8-bit frames
	// (frame mode), else nil; finalFrames their ended episodes' last
	// frames, allocated when first needed.
	frames      []frameEnv
	finalFrames [][]uint8
}

func newSerialVector(name string, cfg Config, n int) (*serialVector, error) {
	envs := make([]Env, n)
	for i := range envs {
		env, err := Make(name, cfg)
		if err != nil {
			for _, e := range envs[:i] {
				_ = e.Close()
			}
			return nil, err
		}
		envs[i] = env
	}
	return buildSerial(name, envs)
}

// NewVector wraps already created environments as a Vector. They must share
// their observation and action spaces.
func NewVector(envs ...Env) (Vector, error) {
	if len(envs) == 0 {
		return nil, errors.New("envs: NewVector needs at least one environment")
	}
	for i, e := range envs {
		if e == nil {
			return nil, fmt.Errorf("envs: NewVector: environment %d is nil", i)
		}
	}
	return buildSerial("", envs)
}

func buildSerial(name string, envs []Env) (*serialVector, error) {
	n := len(envs)
	v := &serialVector{name: name, envs: envs, seeds: make([]int64, n), episodes: make([]int, n)}
	v.dim = envs[0].ObservationSpace().Size()
	for i, e := range envs[1:] {
		if s := e.ObservationSpace(); s.Size() != v.dim {
			return nil, fmt.Errorf("envs: vector of %q: sub-environment %d observes %s, sub-environment 0 %s",
				name, i+1, s, envs[0].ObservationSpace())
		}
	}
	flat := make([]flatEnv, n)
	for i, e := range envs {
		f, ok := e.(flatEnv)
		if !ok || f.obsSize() != v.dim {
			flat = nil
			break
		}
		flat[i] = f
	}
	v.flat = flat
	if flat != nil {
		frames := make([]frameEnv, n)
		for i, f := range flat {
			fe, ok := f.(frameEnv)
			if !ok || len(fe.Frame()) != v.dim {
				frames = nil
				break
			}
			frames[i] = fe
		}
		if frames != nil {
			v.frames, v.finalFrames = frames, make([][]uint8, n)
		}
	}
	v.obsBuf = make([]float64, n*v.dim)
	v.finalBuf = make([]float64, n*v.dim)
	return v, nil
}

// NumEnvs implements Vector.
func (v *serialVector) NumEnvs() int { return len(v.envs) }

// ObservationSpace implements Vector.
func (v *serialVector) ObservationSpace() Space { return v.envs[0].ObservationSpace() }

// ActionSpace implements Vector.
func (v *serialVector) ActionSpace() Space { return v.envs[0].ActionSpace() }

// row returns row i of a flat buffer of rows of v.dim values, capped so
// that appending to it cannot overwrite row i+1.
func (v *serialVector) row(buf []float64, i int) []float64 {
	return buf[i*v.dim : (i+1)*v.dim : (i+1)*v.dim]
}

// Reset implements Vector.
func (v *serialVector) Reset(seeds []int64) ([][]float64, error) {
	n := len(v.envs)
	if len(seeds) != n {
		return nil, fmt.Errorf("envs: Reset of %d sub-environments got %d seeds", n, len(seeds))
	}
	obs := make([][]float64, n)
	var block []float64
	if v.flat != nil {
		block = make([]float64, n*v.dim)
	}
	for i, env := range v.envs {
		if v.flat != nil {
			obs[i] = v.row(block, i)
			v.flat[i].resetInto(seeds[i], obs[i])
		} else {
			o, err := env.Reset(seeds[i])
			if err != nil {
				return nil, fmt.Errorf("envs: reset of sub-environment %d: %w", i, err)
			}
			if err := v.checkObs(i, "Reset", o); err != nil {
				return nil, err
			}
			obs[i] = o
		}
		copy(v.row(v.obsBuf, i), obs[i])
		v.seeds[i], v.episodes[i] = seeds[i], 0
	}
	v.isReset = true
	return obs, nil
}

// check validates a batch of actions before any sub-environment steps, so
// that a bad action leaves every sub-environment as it was.
func (v *serialVector) check(actions [][]float64) error {
	n := len(v.envs)
	if len(actions) != n {
		return fmt.Errorf("envs: Step of %d sub-environments got %d actions", n, len(actions))
	}
	if !v.isReset {
		return fmt.Errorf("envs: Step of a vector of %d × %s called before Reset; call Reset(seeds) first", n, v.label())
	}
	if v.flat == nil {
		// Check against the declared space so that a bad batch is rejected
		// before sub-environment 0 steps, as on the fast path.
		space := v.envs[0].ActionSpace()
		for i, a := range actions {
			if !space.Contains(a) {
				return fmt.Errorf("envs: sub-environment %d: %w", i, badAction(v.label(), a, space))
			}
		}
		return nil
	}
	for i, f := range v.flat {
		if err := f.ready(); err != nil {
			return fmt.Errorf("envs: sub-environment %d: %w", i, err)
		}
		if err := f.checkAction(actions[i]); err != nil {
			return fmt.Errorf("envs: sub-environment %d: %w", i, err)
		}
	}
	return nil
}

// checkObs rejects an observation from a generic sub-environment that is
// outside its space (wrong length, NaN, out of bounds), so that a broken
// custom environment is caught where it happens rather than poisoning
// training.
func (v *serialVector) checkObs(i int, what string, obs []float64) error {
	if space := v.envs[i].ObservationSpace(); !space.Contains(obs) {
		return fmt.Errorf("envs: %s of sub-environment %d of %s returned observation %v, outside its observation space %s",
			what, i, v.label(), obs, space)
	}
	return nil
}

// label names the environment in errors.
func (v *serialVector) label() string {
	if v.name == "" {
		return "vector environment"
	}
	return v.name
}

// autoResetFlat starts sub-environment i's next episode, writing its first
// observation into obs (fast path).
func (v *serialVector) autoResetFlat(i int, obs []float64) {
	v.episodes[i]++
	v.flat[i].resetInto(AutoResetSeed(v.seeds[i], v.episodes[i]), obs)
}

func (v *serialVector) autoResetEnv(i int) ([]float64, error) {
	v.episodes[i]++
	o, err := v.envs[i].Reset(AutoResetSeed(v.seeds[i], v.episodes[i]))
	if err != nil {
		return nil, fmt.Errorf("envs: automatic reset of sub-environment %d: %w", i, err)
	}
	if err := v.checkObs(i, "automatic Reset", o); err != nil {
		return nil, err
	}
	return o, nil
}

// Step implements Vector. The returned slices belong to the caller; on the
// fast path they come from three allocations whatever the batch size.
func (v *serialVector) Step(actions [][]float64) (VectorStep, error) {
	if err := v.check(actions); err != nil {
		return VectorStep{}, err
	}
	n, d := len(v.envs), v.dim
	rows := make([][]float64, 2*n)
	flags := make([]bool, 2*n)
	out := VectorStep{
		Obs: rows[:n:n], FinalObs: rows[n:],
		Terminated: flags[:n:n], Truncated: flags[n:],
	}
	if v.flat == nil {
		out.Rewards = make([]float64, n)
		for i, env := range v.envs {
			s, err := env.Step(actions[i])
			if err != nil {
				return VectorStep{}, fmt.Errorf("envs: step of sub-environment %d: %w", i, err)
			}
			if err := v.checkObs(i, "Step", s.Obs); err != nil {
				return VectorStep{}, err
			}
			out.Rewards[i], out.Terminated[i], out.Truncated[i] = s.Reward, s.Terminated, s.Truncated
			out.Obs[i] = s.Obs
			if s.Done() {
				out.FinalObs[i] = s.Obs
				if out.Obs[i], err = v.autoResetEnv(i); err != nil {
					return VectorStep{}, err
				}
			}
		}
		return out, nil
	}
	floats := make([]float64, n*d+n)
	out.Rewards = floats[n*d:]
	for i, f := range v.flat {
		obs := v.row(floats, i)
		r, term, trunc := f.stepInto(actions[i], obs)
		out.Rewards[i], out.Terminated[i], out.Truncated[i] = r, term, trunc
		if term || trunc {
			final := make([]float64, d)
			copy(final, obs)
			out.FinalObs[i] = final
			v.autoResetFlat(i, obs)
		}
		out.Obs[i] = obs
	}
	return out, nil
}

// StepInto implements InPlaceStepper: every sub-environment in turn.
func (v *serialVector) StepInto(actions [][]float64, out *VectorStep) error {
	if err := v.StartStep(actions, out, false); err != nil {
		return err
	}
	return v.StepRange(actions, out, 0, len(v.envs), false)
}

// Close implements Vector.
func (v *serialVector) Close() error {
	var errs []error
	for i, env := range v.envs {
		if env != nil {
			if err := env.Close(); err != nil {
				errs = append(errs, fmt.Errorf("envs: closing sub-environment %d: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}
