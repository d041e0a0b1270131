// Package cartpole is CartPole-v1 with Gymnasium's dynamics, used by the
// plugin benchmarks to compare the same environment stepped in-process and
// through a plugin. It gives way to the built-in envs "CartPole-v1" wherever
// that is registered (see New).
package cartpole

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/envs"
)

// New returns the built-in CartPole-v1 when the envs registry has one, and
// this package's copy otherwise.
func New(cfg envs.Config) (envs.Env, error) {
	if env, err := envs.Make("CartPole-v1", cfg); err == nil {
		return env, nil
	}
	if len(cfg) > 0 {
		return nil, fmt.Errorf("cartpole: takes no config, got %v", cfg)
	}
	return &env{}, nil
}

const (
	gravity     = 9.8
	massCart    = 1.0
	massPole    = 0.1
	totalMass   = massCart + massPole
	length      = 0.5
	poleMassLen = massPole * length
	forceMag    = 10.0
	tau         = 0.02
	thetaLimit  = 12 * 2 * math.Pi / 360
	xLimit      = 2.4
	maxSteps    = 500
)

type env struct {
	s     [4]float64
	steps int
	rng   *rand.Rand
}

func (e *env) ObservationSpace() envs.Space {
	hi := []float64{xLimit * 2, math.MaxFloat64, thetaLimit * 2, math.MaxFloat64}
	lo := []float64{-hi[0], -hi[1], -hi[2], -hi[3]}
	return envs.NewBoxBounds(lo, hi)
}

func (e *env) ActionSpace() envs.Space { return envs.Discrete{N: 2} }

func (e *env) Reset(seed int64) ([]float64, error) {
	e.rng = rand.New(rand.NewPCG(uint64(seed), 7))
	for i := range e.s {
		e.s[i] = e.rng.Float64()*0.1 - 0.05
	}
	e.steps = 0
	return e.s[:], nil
}

func (e *env) Step(action []float64) (envs.Step, error) {
	if len(action) != 1 || (action[0] != 0 && action[0] != 1) {
		return envs.Step{}, fmt.Errorf("cartpole: action %v is not 0 or 1", action)
	}
	x, xDot, theta, thetaDot := e.s[0], e.s[1], e.s[2], e.s[3]
	force := forceMag
	if action[0] == 0 {
		force = -forceMag
	}
	cos, sin := math.Cos(theta), math.Sin(theta)
	temp := (force + poleMassLen*thetaDot*thetaDot*sin) / totalMass
	thetaAcc := (gravity*sin - cos*temp) / (length * (4.0/3.0 - massPole*cos*cos/totalMass))
	xAcc := temp - poleMassLen*thetaAcc*cos/totalMass
	x += tau * xDot
	xDot += tau * xAcc
	theta += tau * thetaDot
	thetaDot += tau * thetaAcc
	e.s = [4]float64{x, xDot, theta, thetaDot}
	e.steps++
	term := x < -xLimit || x > xLimit || theta < -thetaLimit || theta > thetaLimit
	obs := make([]float64, 4)
	copy(obs, e.s[:])
	return envs.Step{Obs: obs, Reward: 1, Terminated: term, Truncated: !term && e.steps >= maxSteps}, nil
}

func (e *env) Close() error { return nil }
