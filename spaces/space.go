// Package spaces describes the shape of observations and actions: the
// Space contract with its Discrete and Box sets. It imports nothing of the
// module, so both the environments (envs) and the models that read their
// observations and emit their actions (models) build on it without models
// depending on envs.
package spaces

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Space is a set of valid observations or actions. Elements are flat
// float64 slices: a Discrete element is one integral value, a Box element
// holds Size() values in row-major order of Shape().
type Space interface {
	// Shape is the shape of one element; Discrete spaces have shape [1].
	Shape() []int
	// Size is the number of float64 values in one flat element.
	Size() int
	// Contains reports whether x is an element of the space.
	Contains(x []float64) bool
	// Sample draws a uniformly random element (Box dimensions that are
	// unbounded use a standard normal, as Gymnasium does).
	Sample(rng *rand.Rand) []float64
	// String describes the space, e.g. "Discrete(2)" or "Box(-1, 1, [3])".
	String() string
}

// Discrete is the set {0, 1, ..., N-1}.
type Discrete struct {
	N int
}

// Shape implements Space.
func (d Discrete) Shape() []int { return []int{1} }

// Size implements Space.
func (d Discrete) Size() int { return 1 }

// Contains implements Space.
func (d Discrete) Contains(x []float64) bool {
	if len(x) != 1 {
		return false
	}
	v := x[0]
	return v == math.Trunc(v) && v >= 0 && v < float64(d.N)
}

// Sample implements Space.
func (d Discrete) Sample(rng *rand.Rand) []float64 { return []float64{float64(rng.IntN(d.N))} }

// String implements Space.
func (d Discrete) String() string { return fmt.Sprintf("Discrete(%d)", d.N) }

// Box is a (possibly unbounded) box in R^n with per-dimension bounds.
type Box struct {
	Low, High []float64
	Dims      []int
}

// NewBox returns a Box of the given shape whose every dimension has the
// same bounds. Use math.Inf for unbounded dimensions.
func NewBox(low, high float64, shape ...int) Box {
	n := 1
	for _, s := range shape {
		n *= s
	}
	lo, hi := make([]float64, n), make([]float64, n)
	for i := range lo {
		lo[i], hi[i] = low, high
	}
	return Box{Low: lo, High: hi, Dims: append([]int(nil), shape...)}
}

// NewBoxBounds returns a one-dimensional Box with per-dimension bounds.
func NewBoxBounds(low, high []float64) Box {
	if len(low) != len(high) {
		panic("spaces: NewBoxBounds: low and high differ in length")
	}
	return Box{Low: append([]float64(nil), low...), High: append([]float64(nil), high...), Dims: []int{len(low)}}
}

// Shape implements Space.
func (b Box) Shape() []int { return b.Dims }

// Size implements Space.
func (b Box) Size() int { return len(b.Low) }

// Contains implements Space.
func (b Box) Contains(x []float64) bool {
	if len(x) != len(b.Low) {
		return false
	}
	for i, v := range x {
		if math.IsNaN(v) || v < b.Low[i] || v > b.High[i] {
			return false
		}
	}
	return true
}

// Sample implements Space.
func (b Box) Sample(rng *rand.Rand) []float64 {
	x := make([]float64, len(b.Low))
	for i := range x {
		lo, hi := b.Low[i], b.High[i]
		switch {
		case math.IsInf(lo, -1) && math.IsInf(hi, 1):
			x[i] = rng.NormFloat64()
		case math.IsInf(lo, -1):
			x[i] = hi - rng.ExpFloat64()
		case math.IsInf(hi, 1):
			x[i] = lo + rng.ExpFloat64()
		default:
			x[i] = lo + rng.Float64()*(hi-lo)
		}
	}
	return x
}

// String implements Space.
func (b Box) String() string {
	dims := make([]string, len(b.Dims))
	for i, d := range b.Dims {
		dims[i] = fmt.Sprint(d)
	}
	lo, hi := "…", "…"
	if uniform(b.Low) {
		lo = fmt.Sprint(b.Low[0])
	}
	if uniform(b.High) {
		hi = fmt.Sprint(b.High[0])
	}
	return fmt.Sprintf("Box(%s, %s, [%s])", lo, hi, strings.Join(dims, ", "))
}

func uniform(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return len(xs) > 0
}

// Clip limits x to the box in place, dimension by dimension, and returns it.
// Policies with Gaussian outputs produce actions outside a bounded action
// space; built-in environments reject those, so clip them first (RLlib's
// clip_actions). NaN values are left as they are, to be reported by Step.
func (b Box) Clip(x []float64) []float64 {
	for i := range x {
		if i >= len(b.Low) {
			break
		}
		if x[i] < b.Low[i] {
			x[i] = b.Low[i]
		} else if x[i] > b.High[i] {
			x[i] = b.High[i]
		}
	}
	return x
}
