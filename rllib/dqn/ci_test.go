package dqn

import "github.com/gray-ml/gray/rllib/schedule"

// ciCartPole is the CI-sized learning configuration: the defaults with a
// 64-64 network and 3-step returns, which reach a mean of 100 in about
// 10,000 steps with seed 1 (the test allows 30,000).
func ciCartPole() map[string]any {
	return map[string]any{"model": map[string]any{"fcnet_hiddens": []int{64, 64}}, "n_step": 3}
}

// constantLR is a learning-rate schedule that is always lr.
func constantLR(lr float64) schedule.Piecewise { return schedule.Constant(lr) }
