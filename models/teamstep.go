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
//     of its shard's gradient (with one shard, SplitStep does without the
//     sum's phase);
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
// the order of the update itself. A larger gradient is summed and
// updated by up to Size goroutines, one per rangeMin values at most, each
// on its own blocks first.
func (t *Team) SumStep(grads [][]float64, parts int, part func(k int), update func(norm float64) func(lo, hi int)) float64 {
	dst := grads[0]
	n := len(dst)
	bs := normBlockFor(n)
	blocks := (n + bs - 1) / bs
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
			from, to := b*bs, min((b+1)*bs, n)
			addGrads(grads, from, to)
			if sums != nil {
				sumSquares(dst, sums, bs, from, to)
			}
		}
	}
	decide := func() {
		if update != nil {
			norm = addSums(sums)
			apply = update(norm)
		}
	}
	if n < 2*rangeMin && len(grads) > 1 {
		t.Run(parts, part)
		sum(0, blocks)
		if decide(); apply != nil {
			apply(0, n)
		}
		return norm
	}
	// The sum and the update go block by block: each goroutine's own
	// blocks are the same range of the weights in both phases.
	phases := []teamPhase{
		{parts: parts, part: part},
		{parts: blocks, part: func(b int) { sum(b, b+1) }},
	}
	if update != nil {
		phases[1].after = decide
		phases = append(phases, teamPhase{parts: blocks, part: func(b int) {
			if apply != nil {
				apply(b*bs, min((b+1)*bs, n))
			}
		}})
	}
	t.runSteps(min(t.Size(), max(parts, n/rangeMin)), phases)
	return norm
}

// SplitStep runs a training step whose parts write disjoint ranges of one
// gradient g, such as the networks of a model that share no weight
// (Tower), each part one network's loss on the whole minibatch, and
// returns the norm of g:
//
//  1. part(k) for each k in [0, parts) writes g[lo:hi), lo, hi =
//     writes(k), the parts' ranges following each other in k's order
//     from 0 to len(g); right after it, on the same goroutine, the
//     squares of the norm's blocks (GlobalNormOn's) that part k was the
//     last to write in are summed, while they are in that core's cache;
//  2. update(norm) runs once, after every part, and returns what to do to
//     each range of g: nil for nothing;
//  3. the team calls that on ranges of 256 values, each goroutine first
//     the ranges its own parts wrote (as Run cuts the parts), where the
//     weights they read next are.
//
// The norm and the ranges are SumStep's for the one gradient, bit for
// bit, for any team: SplitStep only does without SumStep's phase between
// the parts and the update (a meeting of the team fewer; on a small
// network, a meeting costs about as much as the squares).
func (t *Team) SplitStep(g []float64, parts int, writes func(k int) (lo, hi int), part func(k int), update func(norm float64) func(lo, hi int)) float64 {
	n := len(g)
	bs := normBlockFor(n)
	sums := t.blockSums(n)
	// left counts, per block, the parts that write in it and have not
	// ended: the one that ends last squares it.
	left := t.blockLeft(len(sums))
	end := 0 // where the parts so far stop writing
	for k := range parts {
		lo, hi := writes(k)
		if lo != end || hi < lo || k == parts-1 && hi != n {
			panic(fmt.Sprintf("models: SplitStep: part %d writes [%d, %d) of a gradient of %d values, after parts that end at %d", k, lo, hi, n, end))
		}
		end = hi
	}
	for k := range parts {
		lo, hi := writes(k)
		for b := lo / bs; b*bs < hi; b++ {
			left[b].Add(1)
		}
	}
	norm := 0.0
	var apply func(lo, hi int)
	phases := []teamPhase{
		{parts: parts, part: func(k int) {
			part(k)
			lo, hi := writes(k)
			for b := lo / bs; b*bs < hi; b++ {
				if left[b].Add(-1) == 0 {
					sumSquares(g, sums, bs, b*bs, min((b+1)*bs, n))
				}
			}
		}, after: func() {
			norm = addSums(sums)
			apply = update(norm)
		}},
		{parts: (n + updateBlock - 1) / updateBlock, part: func(b int) {
			if apply != nil {
				apply(b*updateBlock, min((b+1)*updateBlock, n))
			}
		}},
	}
	// Goroutine j's own ranges of the update start where its first part
	// writes (rounded to a range).
	members := min(t.Size(), parts)
	phases[1].own = func(j, m int) (int, int) {
		start := func(j int) int {
			if j == m {
				return phases[1].parts
			}
			k, _ := ShardBounds(j, m, parts)
			lo, _ := writes(k)
			return (lo + updateBlock/2) / updateBlock
		}
		return start(j), max(start(j), start(j+1))
	}
	t.runSteps(members, phases)
	return norm
}

// runSteps runs the phases of a step on n goroutines of the team, or one
// after the other on the caller's when n is 1.
func (t *Team) runSteps(n int, phases []teamPhase) {
	if n > 1 {
		t.runPhases(n, phases)
		return
	}
	for _, ph := range phases {
		for k := range ph.parts {
			ph.part(k)
		}
		if ph.after != nil {
			ph.after()
		}
	}
}

// updateBlock is the size of the ranges a small gradient's update is cut
// into, and of its norm's blocks: fine enough that each goroutine's own
// ranges end within a few values of where its own parts' weights do (a
// tower's), so that a core updates the weights it reads next.
const updateBlock = 256

// blockSums returns a slice for the squares of n values' norm blocks:
// the team's own, or a new one without a team.
func (t *Team) blockSums(n int) []float64 {
	bs := normBlockFor(n)
	blocks := (n + bs - 1) / bs
	if t == nil {
		return make([]float64, blocks)
	}
	t.sums = grow(t.sums, blocks)
	return t.sums
}

// blockLeft returns n zero counters for SplitStep: the team's own (left
// at zero by the last step), or new ones without a team.
func (t *Team) blockLeft(n int) []atomic.Int32 {
	if t == nil {
		return make([]atomic.Int32, n)
	}
	if len(t.left) < n {
		t.left = make([]atomic.Int32, n)
	}
	return t.left[:n]
}

// sumSquares writes the sums of squares of g's blocks of bs values in
// [lo, hi) (lo a multiple of bs) to sums.
func sumSquares(g, sums []float64, bs, lo, hi int) {
	for b := lo / bs; b*bs < hi; b++ {
		sums[b] = squares(g[b*bs : min((b+1)*bs, len(g))])
	}
}

// squares returns the sum of the squares of x, in four interleaved sums
// added at the end: one sum would wait for each addition's result.
func squares(x []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += v[0] * v[0]
		s1 += v[1] * v[1]
		s2 += v[2] * v[2]
		s3 += v[3] * v[3]
	}
	for _, v := range x[i:] {
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
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
