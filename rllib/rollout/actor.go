package rollout

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gray-ml/gray/envs"
)

// Actor acts on one observation at a time, for an agent's ComputeAction:
// it carries a recurrent policy's state from call to call (Reset starts a
// new episode) and clips actions to a Box action space, as the workers
// do, since the environment would reject an action outside it.
type Actor struct {
	state []float64
	out   Actions
}

// Act returns pol's action for one processed observation obs, drawn with
// rng (nil: the policy's most likely action) and clipped to space when it
// is a Box. The returned slice is the caller's.
func (a *Actor) Act(pol Policy, obs []float64, rng *rand.Rand, space envs.Space) ([]float64, error) {
	if r, ok := pol.(Recurrent); ok && r.StateSize() > 0 {
		if len(a.state) == 0 {
			a.state = make([]float64, r.StateSize())
		}
		if err := r.ActRecurrent(obs, a.state, 1, rng, &a.out); err != nil {
			return nil, err
		}
		copy(a.state, a.out.State)
	} else if err := pol.Act(obs, 1, rng, &a.out); err != nil {
		return nil, err
	}
	action := slices.Clone(a.out.Actions)
	if box, ok := space.(envs.Box); ok {
		for i := range action {
			action[i] = math.Min(math.Max(action[i], box.Low[i]), box.High[i])
		}
	}
	return action, nil
}

// State is the recurrent state the next Act starts from: empty before the
// first Act and for a feed-forward policy.
func (a *Actor) State() []float64 { return a.state }

// Reset starts a new episode: the next Act starts from the zero state.
func (a *Actor) Reset() { clear(a.state) }
