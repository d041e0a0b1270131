package dqn

import "github.com/gray-ml/gray/rllib/schedule"

// ciCartPole is the CI-sized learning configuration: the defaults, which
// reach a mean of 100 in about 12,000 steps with seed 1 (the test allows
// 30,000).
func ciCartPole() map[string]any { return map[string]any{} }

// constantLR is a learning-rate schedule that is always lr.
func constantLR(lr float64) schedule.Piecewise { return schedule.Constant(lr) }
