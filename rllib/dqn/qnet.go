package dqn

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
)

// qNetwork maps observations to one Q-value per action. Without dueling
// it is the catalog's fully connected network with one output per action.
// With dueling the hidden layers are shared and feed two linear streams, a
// state value V(s) and advantages A(s, a), combined as
//
//	Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')
//
// (subtracting the mean makes V and A identifiable, Wang et al. 2016).
type qNetwork struct {
	model    models.Model
	params   *models.Params
	dueling  bool
	obsDim   int
	nActions int
	// tape runs forward passes without gradients (acting, targets).
	tape *models.Tape
}

// newQNetwork builds the network; the same seed gives the same weights.
func newQNetwork(obsShape []int, nActions int, opts models.ModelOptions, dueling bool, seed int64) (*qNetwork, error) {
	opts.Value = dueling
	opts.VFShareLayers = true
	opts.FreeLogStd = false
	m, err := models.NewModel(obsShape, nActions, opts, uint64(seed))
	if err != nil {
		return nil, err
	}
	tape := models.NewTape()
	tape.SetNoGrad(true)
	return &qNetwork{model: m, params: m.Params(), dueling: dueling, obsDim: m.NumInputs(), nActions: nActions, tape: tape}, nil
}

// discreteActions returns the number of actions of a Discrete space and,
// for any other space, an error naming the algorithms that fit it.
func discreteActions(space envs.Space, env string) (int, error) {
	d, ok := space.(envs.Discrete)
	if !ok {
		kind := fmt.Sprintf("%T", space)
		kind = kind[strings.LastIndex(kind, ".")+1:]
		return 0, fmt.Errorf("DQN: environment %q has a %s action space %v; DQN needs a Discrete action space (one Q-value per action). Use PPO, A3C or ES for continuous (Box) actions", env, kind, space)
	}
	if d.N < 1 {
		return 0, fmt.Errorf("DQN: environment %q has an empty action space %v", env, space)
	}
	return d.N, nil
}

// combine turns the model's output into Q-values on tape t.
func (q *qNetwork) combine(t *models.Tape, o models.Output) *models.Tensor {
	if !q.dueling {
		return o.Out
	}
	adv := o.Out
	return t.Add(o.Value, t.Sub(adv, t.RowMean(adv)))
}

// forward computes Q [n×actions] on tape t (recording gradients unless t
// is a no-grad tape).
func (q *qNetwork) forward(t *models.Tape, obs []float64, n int) *models.Tensor {
	return q.combine(t, q.model.Forward(t, t.Const(n, q.obsDim, obs)))
}

// values computes Q without gradients on the network's own tape; the
// result is valid until the next call.
func (q *qNetwork) values(obs []float64, n int) []float64 {
	q.tape.Reset()
	return q.forward(q.tape, obs, n).Data
}

// act writes an ε-greedy action for each of the n observations: with
// probability eps a uniformly random action, else the greedy one (rng
// nil: always greedy).
func (q *qNetwork) act(obs []float64, n int, eps float64, rng *rand.Rand, actions []float64) {
	vals := q.values(obs, n)
	for i := range n {
		if rng != nil && eps > 0 && rng.Float64() < eps {
			actions[i] = float64(rng.IntN(q.nActions))
			continue
		}
		actions[i] = float64(argmax(vals[i*q.nActions : (i+1)*q.nActions]))
	}
}

// argmax is the index of the first largest value.
func argmax(xs []float64) int {
	best := 0
	for j, v := range xs {
		if v > xs[best] {
			best = j
		}
	}
	return best
}
