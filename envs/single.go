package envs

import (
	"fmt"
	"image"
)

// VectorRenderer is implemented by Vectors that can draw one of their
// sub-environments (plugins that can render).
type VectorRenderer interface {
	Render(i int) (image.Image, error)
}

// SingleEnv adapts a Vector of one sub-environment to Env, so that natively
// batched environments (plugins) can be made one at a time by Make as
// algorithms do to learn the spaces. It follows Env's contract, not the
// Vector's: when a step ends the episode, Step returns the episode's final
// observation and the next Step needs a Reset first, as with the built-in
// environments (the Vector has already begun the next episode; Reset
// replaces it). When v implements VectorRenderer, the Env is a Renderer.
// Closing the Env closes v.
func SingleEnv(v Vector) (Env, error) {
	if v == nil {
		return nil, fmt.Errorf("envs: SingleEnv: the vector is nil")
	}
	if n := v.NumEnvs(); n != 1 {
		return nil, fmt.Errorf("envs: SingleEnv needs a vector of one sub-environment, got %d", n)
	}
	s := &singleEnv{v: v, actions: make([][]float64, 1)}
	if r, ok := v.(VectorRenderer); ok {
		return &renderingSingleEnv{singleEnv: s, r: r}, nil
	}
	return s, nil
}

// singleEnv is SingleEnv's adapter.
type singleEnv struct {
	v       Vector
	actions [][]float64 // reused one-row batch
	state   episodeState
}

// episodeState tracks where an adapted environment is in its episode, to
// refuse a Step the built-in environments would refuse.
type episodeState int

const (
	beforeReset episodeState = iota
	running
	ended
)

// ObservationSpace implements Env.
func (s *singleEnv) ObservationSpace() Space { return s.v.ObservationSpace() }

// ActionSpace implements Env.
func (s *singleEnv) ActionSpace() Space { return s.v.ActionSpace() }

// Reset implements Env.
func (s *singleEnv) Reset(seed int64) ([]float64, error) {
	obs, err := s.v.Reset([]int64{seed})
	if err != nil {
		s.state = beforeReset
		return nil, err
	}
	if len(obs) != 1 {
		return nil, fmt.Errorf("envs: Reset of a one-environment vector returned %d observations", len(obs))
	}
	s.state = running
	return obs[0], nil
}

// Step implements Env.
func (s *singleEnv) Step(action []float64) (Step, error) {
	switch s.state {
	case beforeReset:
		return Step{}, fmt.Errorf("envs: Step called before Reset; call Reset(seed) first")
	case ended:
		return Step{}, fmt.Errorf("envs: Step called after the episode ended; call Reset(seed) to start a new one")
	}
	s.actions[0] = action
	vs, err := s.v.Step(s.actions)
	s.actions[0] = nil
	if err != nil {
		return Step{}, err
	}
	if len(vs.Obs) != 1 || len(vs.Rewards) != 1 || len(vs.Terminated) != 1 || len(vs.Truncated) != 1 {
		return Step{}, fmt.Errorf("envs: Step of a one-environment vector returned %d observations and %d rewards",
			len(vs.Obs), len(vs.Rewards))
	}
	st := Step{Obs: vs.Obs[0], Reward: vs.Rewards[0], Terminated: vs.Terminated[0], Truncated: vs.Truncated[0]}
	if st.Done() {
		s.state = ended
		if len(vs.FinalObs) == 1 && vs.FinalObs[0] != nil {
			st.Obs = vs.FinalObs[0]
		} else {
			return Step{}, fmt.Errorf("envs: Step of a one-environment vector ended the episode without a final observation")
		}
	}
	return st, nil
}

// Close implements Env.
func (s *singleEnv) Close() error { return s.v.Close() }

// renderingSingleEnv is a singleEnv over a Vector that can draw.
type renderingSingleEnv struct {
	*singleEnv
	r VectorRenderer
}

// Render implements Renderer.
func (s *renderingSingleEnv) Render() (image.Image, error) { return s.r.Render(0) }
