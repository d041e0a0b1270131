package envs

import (
	"errors"
	"fmt"
)

// serialVector steps n independent Env instances one after the other.
type serialVector struct {
	name string
	envs []Env
	// seeds for automatic resets continue from the seeds given to Reset so
	// that a run is reproducible from its seed alone.
	nextSeed []int64
}

func newSerialVector(name string, cfg Config, n int) (*serialVector, error) {
	v := &serialVector{name: name, envs: make([]Env, n), nextSeed: make([]int64, n)}
	for i := range v.envs {
		env, err := Make(name, cfg)
		if err != nil {
			_ = v.Close()
			return nil, err
		}
		v.envs[i] = env
	}
	return v, nil
}

// NewVector wraps already created environments as a Vector.
func NewVector(envs ...Env) (Vector, error) {
	if len(envs) == 0 {
		return nil, errors.New("envs: NewVector needs at least one environment")
	}
	return &serialVector{envs: envs, nextSeed: make([]int64, len(envs))}, nil
}

func (v *serialVector) NumEnvs() int            { return len(v.envs) }
func (v *serialVector) ObservationSpace() Space { return v.envs[0].ObservationSpace() }
func (v *serialVector) ActionSpace() Space      { return v.envs[0].ActionSpace() }

func (v *serialVector) Reset(seeds []int64) ([][]float64, error) {
	if len(seeds) != len(v.envs) {
		return nil, fmt.Errorf("envs: Reset of %d sub-environments got %d seeds", len(v.envs), len(seeds))
	}
	obs := make([][]float64, len(v.envs))
	for i, env := range v.envs {
		o, err := env.Reset(seeds[i])
		if err != nil {
			return nil, fmt.Errorf("envs: reset of sub-environment %d: %w", i, err)
		}
		obs[i] = o
		// Later episodes of sub-environment i use seeds that cannot collide
		// with those of another sub-environment.
		v.nextSeed[i] = seeds[i] + 1_000_003*int64(len(v.envs))
	}
	return obs, nil
}

func (v *serialVector) Step(actions [][]float64) (VectorStep, error) {
	n := len(v.envs)
	if len(actions) != n {
		return VectorStep{}, fmt.Errorf("envs: Step of %d sub-environments got %d actions", n, len(actions))
	}
	out := VectorStep{
		Obs:        make([][]float64, n),
		Rewards:    make([]float64, n),
		Terminated: make([]bool, n),
		Truncated:  make([]bool, n),
		FinalObs:   make([][]float64, n),
	}
	for i, env := range v.envs {
		s, err := env.Step(actions[i])
		if err != nil {
			return VectorStep{}, fmt.Errorf("envs: step of sub-environment %d: %w", i, err)
		}
		out.Rewards[i], out.Terminated[i], out.Truncated[i] = s.Reward, s.Terminated, s.Truncated
		if s.Done() {
			out.FinalObs[i] = s.Obs
			o, err := env.Reset(v.nextSeed[i])
			if err != nil {
				return VectorStep{}, fmt.Errorf("envs: automatic reset of sub-environment %d: %w", i, err)
			}
			v.nextSeed[i]++
			out.Obs[i] = o
		} else {
			out.Obs[i] = s.Obs
		}
	}
	return out, nil
}

func (v *serialVector) Close() error {
	var errs []error
	for _, env := range v.envs {
		if env != nil {
			errs = append(errs, env.Close())
		}
	}
	return errors.Join(errs...)
}
