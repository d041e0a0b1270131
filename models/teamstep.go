package models

import (
	"fmt"
	"math"
	"sync/atomic"
)

// A data-parallel training step meets its team three times: the shards'
// forward and backward passes, the gradient sum, and the update. The
// gradient sum and the norm of the sum (SumNormOn), and the clipping, the
// optimizer step and the finite check of the new weights (Adam's
// StepScaledOn) each take one Run instead of two or three: every meeting
// costs a hand-off and a wait for the slowest member, as long as a small
// network's whole update. The values are those of the separate calls,
// for any team.

// SumNormOn adds srcs[1:] into srcs[0] as SumGradsOn does (clearing them)
// and returns the global norm of the sum as GlobalNormOn computes it, in
// one Run: each member squares the blocks it has just summed.
func (t *Team) SumNormOn(srcs [][]float64) float64 {
	dst := srcs[0]
	sums := t.blockSums(len(dst))
	t.Ranges(len(dst), normBlock, func(lo, hi int) {
		addClearing(srcs, lo, hi)
		sumSquares(dst, sums, lo, hi)
	})
	return addSums(sums)
}

// blockSums returns a slice for the squares of n values' norm blocks:
// the team's own, or a new one without a team.
func (t *Team) blockSums(n int) []float64 {
	blocks := (n + normBlock - 1) / normBlock
	if t == nil {
		return make([]float64, blocks)
	}
	t.sums = grow(t.sums, blocks)
	return t.sums
}

// sumSquares writes the sums of squares of g's norm blocks in [lo, hi)
// (lo a multiple of normBlock) to sums.
func sumSquares(g, sums []float64, lo, hi int) {
	for b := lo / normBlock; b*normBlock < hi; b++ {
		s := 0.0
		for _, v := range g[b*normBlock : min((b+1)*normBlock, len(g))] {
			s += v * v
		}
		sums[b] = s
	}
}

// addSums adds the blocks' sums in order and returns the square root.
func addSums(sums []float64) float64 {
	s := 0.0
	for _, v := range sums {
		s += v
	}
	return math.Sqrt(s)
}

// StepScaledOn multiplies g by scale (unless scale is 1), applies StepOn's
// update and reports whether every updated weight is finite, with each
// member doing all three on its own range of weights: the values are those
// of scaling, StepOn and Team.AllFinite one after the other.
func (o *Adam) StepScaledOn(team *Team, w, g []float64, scale float64) (finite bool, err error) {
	if len(w) != len(g) {
		return false, fmt.Errorf("models: Adam step with %d weights and %d gradients", len(w), len(g))
	}
	u, err := o.next(len(w))
	if err != nil {
		return false, err
	}
	var bad atomic.Bool
	team.Ranges(len(w), normBlock, func(lo, hi int) {
		gr := g[lo:hi]
		if scale != 1 {
			for i := range gr {
				gr[i] *= scale
			}
		}
		u.apply(w, g, lo, hi)
		for _, v := range w[lo:hi] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad.Store(true)
				return
			}
		}
	})
	return !bad.Load(), nil
}
