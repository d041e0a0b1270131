package rollout

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib/sample"
)

// Actor acts on one observation at a time, for an agent's ComputeAction:
// it keeps the row the observation is processed into, carries a recurrent
// policy's state from call to call (Reset starts a new episode) and clips
// actions to a Box action space, as the workers do, since the environment
// would reject an action outside it.
type Actor struct {
	space envs.Space
	obs   []float64
	state []float64
	out   Actions
}

// NewActor returns an Actor whose actions are of space.
func NewActor(space envs.Space) Actor { return Actor{space: space} }

// Space is the action space the actor clips to.
func (a *Actor) Space() envs.Space { return a.space }

// Obs returns the actor's observation row of n values, for the caller to
// process the raw observation into before Act. It is reused by every call.
func (a *Actor) Obs(n int) []float64 {
	a.obs = sample.Resize(a.obs, n)
	return a.obs
}

// Act returns pol's action for one processed observation obs (usually the
// row Obs returned), drawn with rng (nil: the policy's most likely action)
// and clipped to the action space when it is a Box. The returned slice is
// the caller's.
func (a *Actor) Act(pol Policy, obs []float64, rng *rand.Rand) ([]float64, error) {
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
	if box, ok := a.space.(envs.Box); ok {
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
