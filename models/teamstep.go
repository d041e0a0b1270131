package models

import (
	"fmt"
	"math"
	"sync/atomic"
)

// A data-parallel training step is one meeting of its team (SumStep): the
// shards' forward and backward passes, the gradient sum with the norm of
// the sum, and the update (clipping, the optimizer step, the finite check
// of the new weights) are phases of one Run, whose goroutines pass from
// one phase to the next without the owner's hand-offs and wake-ups. Each
// goroutine sums and then updates the same blocks of the weights, while
// they are in its cache, unless another goroutine, done with its own,
// takes them first; a small network's sum and update are done by the
// caller after the shards.
// The values are those of the separate calls (SumGradsOn, GlobalNormOn,
// scaling, Adam's StepOn, AllFinite), for any team.

// SumStep runs a training step on the team and returns the norm of the
// summed gradient:
//
//  1. part(k) for each k in [0, parts): the parts leave shard j's
//     gradient in grads[j] (grads[0] is the master's). A data-parallel
//     step has a part per shard; a model of separate networks (Tower) can
//     have a part per network and shard, each writing its network's slice
//     of its shard's gradient;
//  2. the team adds grads[1:] into grads[0] in order, only reading them
//     (each part writes its gradient: Tape.BackwardSet, or a clear on the
//     part's own goroutine before Backward), and squares the sum's blocks
//     for the norm, which is GlobalNormOn's;
//  3. update(norm) runs once, on one goroutine, after every part and the
//     whole sum, and returns what to do to each range of the sum: nil for
//     nothing;
//  4. the team calls that on its ranges [lo, hi), which are aligned to
//     256 values (so an elementwise update whose vector loop takes four
//     values at a time gives the same values for any team).
//
// With a nil update SumStep only sums, and returns 0. Each goroutine runs
// its own parts first (as Run cuts them) and then any not yet started.
//
// The sum of a few shards' small gradients (fewer than 2·rangeMin values)
// and its update are done by the caller alone once the parts are done:
// handing them to the team moved the weights, the optimizer's state and
// the shards' gradients between the cores' caches every step, a cost of
// the order of the update itself. With one gradient (a step of separate
// networks on one shard) nothing is summed, and the team updates it
// together, each goroutine first the ranges its own networks' weights are
// in, so that they stay in its core's cache. A larger gradient is summed
// and updated by up to Size goroutines, one per rangeMin values at most,
// each on its own blocks first.
func (t *Team) SumStep(grads [][]float64, parts int, part func(k int), update func(norm float64) func(lo, hi int)) float64 {
	dst := grads[0]
	n := len(dst)
	blocks := (n + normBlock - 1) / normBlock
	var sums []float64
	if update != nil {
		sums = t.blockSums(n)
	}
	norm := 0.0
	var apply func(lo, hi int)
	// sum adds and squares blocks [bl, bh), block by block, so that the
	// sum's block is still in the L1 cache when it is squared.
	sum := func(bl, bh int) {
		for b := bl; b < bh; b++ {
			from, to := b*normBlock, min((b+1)*normBlock, n)
			addGrads(grads, from, to)
			if sums != nil {
				sumSquares(dst, sums, from, to)
			}
		}
	}
	decide := func() {
		if update != nil {
			norm = addSums(sums)
			apply = update(norm)
		}
	}
	small := n < 2*rangeMin
	if small && len(grads) > 1 {
		t.runWaiting(parts, part, phaseWatch)
		sum(0, blocks)
		if decide(); apply != nil {
			apply(0, n)
		}
		return norm
	}
	// The sum and the update go block by block: each goroutine's own
	// blocks are the same range of the weights in both phases. A small
	// gradient's update is cut finer, so that its few thousand values
	// are shared too.
	upd := normBlock
	if small {
		upd = updateBlock
	}
	phases := []teamPhase{
		{parts: parts, part: part},
		{parts: blocks, part: func(b int) { sum(b, b+1) }},
	}
	if update != nil {
		phases[1].after = decide
		phases = append(phases, teamPhase{parts: (n + upd - 1) / upd, part: func(b int) {
			if apply != nil {
				apply(b*upd, min((b+1)*upd, n))
			}
		}})
	}
	members := min(t.Size(), max(parts, n/rangeMin))
	if members == 1 {
		for _, ph := range phases {
			for k := range ph.parts {
				ph.part(k)
			}
			if ph.after != nil {
				ph.after()
			}
		}
		return norm
	}
	t.runPhases(members, phases, watchFor)
	return norm
}

// updateBlock is the size of the ranges a small gradient's update is cut
// into: fine enough that each goroutine's own ranges end within a few
// values of where its own parts' weights do (a tower's), so that a core
// updates the weights it reads next.
const updateBlock = 256

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

// AdamRanges is one Adam step on a gradient scaled by a factor, ready to
// be applied range by range (Team.SumStep's update): each range's
// gradient is multiplied by the factor, the step applied to its weights,
// the gradient left zero (so the next backward pass starts from zero), and
// the new weights checked. The weights are those of scaling the gradient,
// Adam's StepOn and AllFinite one after the other, for any cut of ranges
// aligned to 4 values (the AVX2 loop's four at a time: each weight takes
// the same path, and rounding, for any cut).
type AdamRanges struct {
	u       adamStep
	w, g    []float64
	scale   float64
	nonFini atomic.Bool
}

// Ranges counts one step of o on the weights w with the gradient g times
// scale and returns it, to apply by ranges (Apply). It fails when o holds
// a state for a different number of weights.
func (o *Adam) Ranges(w, g []float64, scale float64) (*AdamRanges, error) {
	if len(w) != len(g) {
		return nil, fmt.Errorf("models: Adam step with %d weights and %d gradients", len(w), len(g))
	}
	u, err := o.next(len(w))
	if err != nil {
		return nil, err
	}
	return &AdamRanges{u: u, w: w, g: g, scale: scale}, nil
}

// Apply updates the weights [lo, hi), lo a multiple of 4. Ranges that
// do not overlap may be applied concurrently.
func (r *AdamRanges) Apply(lo, hi int) {
	u := &r.u
	if !adamScaledUpdate(r.w[lo:hi], r.g[lo:hi], u.m[lo:hi], u.v[lo:hi], u.b1, u.b2, u.step, u.sc2, u.epsilon, r.scale) {
		r.nonFini.Store(true)
	}
}

// Finite reports whether every weight the applied ranges updated is
// finite.
func (r *AdamRanges) Finite() bool { return !r.nonFini.Load() }
