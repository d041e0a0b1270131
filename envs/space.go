package envs

import "github.com/gray-ml/gray/spaces"

// The spaces an environment declares are package spaces' (which the models
// also read, without importing envs); these names keep envs.Box and its
// kin working for environment authors.
type (
	// Space is spaces.Space: a set of valid observations or actions.
	Space = spaces.Space
	// Discrete is spaces.Discrete: the set {0, 1, ..., N-1}.
	Discrete = spaces.Discrete
	// Box is spaces.Box: a product of intervals with a shape.
	Box = spaces.Box
)

// NewBox is spaces.NewBox: a Box of the given shape whose every
// dimension has the bounds low and high.
func NewBox(low, high float64, shape ...int) Box { return spaces.NewBox(low, high, shape...) }

// NewBoxBounds is spaces.NewBoxBounds: a one-dimensional Box with
// per-dimension bounds.
func NewBoxBounds(low, high []float64) Box { return spaces.NewBoxBounds(low, high) }
