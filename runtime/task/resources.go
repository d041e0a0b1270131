package task

import (
	"fmt"
	"maps"
)

// Epsilon is the amount of a resource below which it counts as none:
// fractional requests summed and subtracted leave rounding dust, which
// must neither block a task nor be granted.
const Epsilon = 1e-9

// Clone returns a deep copy of r (its Custom map is its own, never nil).
func (r Resources) Clone() Resources {
	c := Resources{CPU: r.CPU, GPU: r.GPU, Custom: make(map[string]float64, len(r.Custom))}
	maps.Copy(c.Custom, r.Custom)
	return c
}

// Check reports a request or capacity no node can mean: a negative amount,
// or a custom resource without a name.
func (r Resources) Check() error {
	if r.CPU < 0 || r.GPU < 0 {
		return fmt.Errorf("negative resources %s", r)
	}
	for k, v := range r.Custom {
		if v < 0 || k == "" {
			return fmt.Errorf("custom resource %q=%g: names must be non-empty and amounts non-negative", k, v)
		}
	}
	return nil
}

// Add returns r + b, amount by amount.
func (r Resources) Add(b Resources) Resources { return r.plus(b, 1) }

// Sub returns r - b, amount by amount (negative amounts are kept; see
// NonNegative).
func (r Resources) Sub(b Resources) Resources { return r.plus(b, -1) }

func (r Resources) plus(b Resources, sign float64) Resources {
	out := r.Clone()
	out.CPU += sign * b.CPU
	out.GPU += sign * b.GPU
	for k, v := range b.Custom {
		out.Custom[k] += sign * v
	}
	return out
}

// Min returns the smaller of r and b for each amount; a custom resource
// only b has counts as 0 in r, so it is left out.
func (r Resources) Min(b Resources) Resources {
	out := Resources{CPU: min(r.CPU, b.CPU), GPU: min(r.GPU, b.GPU), Custom: make(map[string]float64, len(r.Custom))}
	for k, v := range r.Custom {
		out.Custom[k] = min(v, b.Custom[k])
	}
	return out
}

// Max returns the larger of r and b for each amount, custom resources of
// either included.
func (r Resources) Max(b Resources) Resources {
	out := Resources{CPU: max(r.CPU, b.CPU), GPU: max(r.GPU, b.GPU), Custom: make(map[string]float64, len(r.Custom))}
	for k, v := range r.Custom {
		out.Custom[k] = max(v, b.Custom[k])
	}
	for k, v := range b.Custom {
		out.Custom[k] = max(v, r.Custom[k])
	}
	return out
}

// NonNegative returns r with every amount below Epsilon (negative, or
// rounding dust) set to 0; custom resources that end at 0 are left out.
func (r Resources) NonNegative() Resources {
	out := Resources{CPU: AtLeastZero(r.CPU), GPU: AtLeastZero(r.GPU), Custom: make(map[string]float64, len(r.Custom))}
	for k, v := range r.Custom {
		if v = AtLeastZero(v); v > 0 {
			out.Custom[k] = v
		}
	}
	return out
}

// IsZero reports whether no amount of r reaches Epsilon.
func (r Resources) IsZero() bool {
	if r.CPU > Epsilon || r.GPU > Epsilon {
		return false
	}
	for _, v := range r.Custom {
		if v > Epsilon {
			return false
		}
	}
	return true
}

// Equal reports whether r and b differ by less than Epsilon in every
// amount (a custom resource one lacks counts as 0 there).
func (r Resources) Equal(b Resources) bool {
	near := func(x, y float64) bool { return x-y < Epsilon && y-x < Epsilon }
	if !near(r.CPU, b.CPU) || !near(r.GPU, b.GPU) {
		return false
	}
	for k, v := range r.Custom {
		if !near(v, b.Custom[k]) {
			return false
		}
	}
	for k, v := range b.Custom {
		if !near(v, r.Custom[k]) {
			return false
		}
	}
	return true
}

// AtLeastZero returns x, or 0 when x is below Epsilon.
func AtLeastZero(x float64) float64 {
	if x < Epsilon {
		return 0
	}
	return x
}
