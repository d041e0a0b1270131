package dqn

// ciCartPole is the CI-sized learning configuration: the defaults, which
// reach a mean of 100 in about 12,000 steps with seed 1 (the test allows
// 30,000).
func ciCartPole() map[string]any { return map[string]any{} }
