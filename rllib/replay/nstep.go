package replay

import "fmt"

// NStep turns one environment's steps into n-step transitions: the
// transition starting at step t carries r_t + γ·r_{t+1} + … + γ^{k-1}·r_{t+k-1},
// the observation after those k steps and the discount γ^k, where k = n
// unless the episode ends first.
//
// At an episode's end every pending transition is emitted with the steps
// that remain: a terminated episode gives discount 0 (no value after a
// terminal state), a truncated one (a time limit) keeps γ^k and the final
// observation, so the target still bootstraps from it. One NStep serves
// one sub-environment; it reuses its memory and does not allocate in the
// steady state.
type NStep struct {
	n              int
	gamma          float64
	obsDim, actDim int
	// A ring of the last n steps' observations, actions and rewards.
	obs, act, rew []float64
	head, count   int
}

// NewNStep assembles n-step transitions (n ≥ 1) with discount gamma.
func NewNStep(n int, gamma float64, obsDim, actDim int) (*NStep, error) {
	if n < 1 {
		return nil, fmt.Errorf("replay: n-step horizon %d must be at least 1", n)
	}
	if obsDim < 1 || actDim < 1 {
		return nil, fmt.Errorf("replay: observation width %d and action width %d must be at least 1", obsDim, actDim)
	}
	return &NStep{
		n: n, gamma: gamma, obsDim: obsDim, actDim: actDim,
		obs: make([]float64, n*obsDim), act: make([]float64, n*actDim), rew: make([]float64, n),
	}, nil
}

// Pending is the number of steps waiting for their n-step outcome.
func (s *NStep) Pending() int { return s.count }

// Add records one step (obs, action) → (reward, nextObs, terminated,
// truncated) and appends to out every transition that became complete.
// For a truncated step nextObs must be the episode's final observation,
// not the first of the next episode.
func (s *NStep) Add(obs, action []float64, reward float64, nextObs []float64, terminated, truncated bool, out *Transitions) {
	od, ad := s.obsDim, s.actDim
	slot := (s.head + s.count) % s.n
	copy(s.obs[slot*od:(slot+1)*od], obs)
	copy(s.act[slot*ad:(slot+1)*ad], action)
	s.rew[slot] = reward
	s.count++
	switch {
	case terminated:
		for s.count > 0 {
			s.emit(nextObs, true, out)
		}
	case truncated:
		for s.count > 0 {
			s.emit(nextObs, false, out)
		}
	case s.count == s.n:
		s.emit(nextObs, false, out)
	}
}

// emit appends the transition of the oldest pending step, whose outcome
// is the count steps up to nextObs, and drops it.
func (s *NStep) emit(nextObs []float64, terminal bool, out *Transitions) {
	od, ad := s.obsDim, s.actDim
	ret, disc := 0.0, 1.0
	for i := range s.count {
		ret += disc * s.rew[(s.head+i)%s.n]
		disc *= s.gamma
	}
	if terminal {
		disc = 0
	}
	h := s.head
	out.Append(s.obs[h*od:(h+1)*od], s.act[h*ad:(h+1)*ad], ret, nextObs, disc)
	s.head = (s.head + 1) % s.n
	s.count--
}

// Clear drops pending steps (when an environment is reset from outside).
func (s *NStep) Clear() { s.head, s.count = 0, 0 }
