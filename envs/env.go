// Package envs holds the environment contract, observation and action
// spaces (package spaces' types, under names of their own here), vectorised stepping, the built-in classic-control environments and
// the registry that maps names (and plugin references) to environments.
package envs

import "image"

// Env is one environment instance, following Gymnasium's contract.
//
// Observations and actions are flat float64 slices described by the
// environment's spaces; a Discrete action is a one-element slice holding the
// action's index. Returned slices belong to the caller.
type Env interface {
	// ObservationSpace describes the observations Reset and Step return.
	ObservationSpace() Space
	// ActionSpace describes the actions Step accepts.
	ActionSpace() Space
	// Reset reseeds the environment's random source with seed and starts a
	// new episode, returning its first observation.
	Reset(seed int64) ([]float64, error)
	// Step applies action and advances the environment by one step.
	Step(action []float64) (Step, error)
	// Close releases the environment's resources.
	Close() error
}

// Step is the outcome of one environment step.
type Step struct {
	Obs    []float64
	Reward float64
	// Terminated is true when the episode reached a terminal state of the
	// underlying MDP (bootstrapping must stop).
	Terminated bool
	// Truncated is true when the episode was cut short, usually by a time
	// limit (the value of Obs may still be bootstrapped).
	Truncated bool
}

// Done reports whether the episode is over for either reason.
func (s Step) Done() bool { return s.Terminated || s.Truncated }

// Renderer is implemented by environments that can draw their state.
type Renderer interface {
	Render() (image.Image, error)
}

// Vector steps N copies of an environment in one call. It is the contract
// rollout workers use, and the one plugins serve, so that a plugin pays one
// round trip per batch rather than per step.
//
// Sub-environments reset automatically: when a step ends an episode,
// VectorStep.Obs[i] holds the first observation of the next episode and
// VectorStep.FinalObs[i] the last observation of the one that ended.
type Vector interface {
	// NumEnvs is the number of sub-environments N.
	NumEnvs() int
	// ObservationSpace is the space of one sub-environment's observation.
	ObservationSpace() Space
	// ActionSpace is the space of one sub-environment's action.
	ActionSpace() Space
	// Reset resets every sub-environment i with seeds[i] and returns the
	// observations as N rows.
	Reset(seeds []int64) ([][]float64, error)
	// Step applies actions[i] to sub-environment i.
	Step(actions [][]float64) (VectorStep, error)
	// Close releases every sub-environment.
	Close() error
}

// VectorStep is the outcome of one step of every sub-environment.
type VectorStep struct {
	Obs        [][]float64
	Rewards    []float64
	Terminated []bool
	Truncated  []bool
	// FinalObs[i] is the last observation of an episode that ended at this
	// step in sub-environment i, nil otherwise.
	FinalObs [][]float64
	// Frames and FinalFrames replace Obs and FinalObs (which stay nil) when
	// a RangeStepper steps in frame mode: each sub-environment's 8-bit
	// frame, the observation value for value, in a buffer the Vector owns
	// until the sub-environment's next step.
	Frames      [][]uint8
	FinalFrames [][]uint8
}
