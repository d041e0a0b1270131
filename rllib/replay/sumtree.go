package replay

import (
	"fmt"
	"math"
)

// SumTree holds one non-negative priority per slot and answers, in
// O(log n), the total, the minimum, and which slot a point of the running
// sum [0, total) falls in: the data structure behind proportional
// prioritised replay (Schaul et al. 2016, appendix B.2.1).
//
// It is an implicit binary tree over a power-of-two number of leaves:
// node i has children 2i and 2i+1, leaf k is node size+k. Every inner
// node keeps both the sum and the minimum of its subtree, so sampling and
// the largest importance weight need no scan.
type SumTree struct {
	size int // number of leaves, a power of two ≥ capacity
	cap  int
	sum  []float64
	min  []float64
}

// NewSumTree returns a tree of capacity slots, all of priority 0.
func NewSumTree(capacity int) *SumTree {
	size := 1
	for size < capacity {
		size *= 2
	}
	t := &SumTree{size: size, cap: capacity, sum: make([]float64, 2*size), min: make([]float64, 2*size)}
	for i := range t.min {
		t.min[i] = math.Inf(1)
	}
	return t
}

// Capacity is the number of slots.
func (t *SumTree) Capacity() int { return t.cap }

// Set gives slot k priority p (finite and ≥ 0).
func (t *SumTree) Set(k int, p float64) {
	if k < 0 || k >= t.cap {
		panic(fmt.Sprintf("replay: SumTree.Set slot %d out of range [0, %d)", k, t.cap))
	}
	i := t.size + k
	t.sum[i], t.min[i] = p, p
	for i /= 2; i >= 1; i /= 2 {
		t.sum[i] = t.sum[2*i] + t.sum[2*i+1]
		t.min[i] = math.Min(t.min[2*i], t.min[2*i+1])
	}
}

// Get is slot k's priority.
func (t *SumTree) Get(k int) float64 { return t.sum[t.size+k] }

// Total is the sum of all priorities.
func (t *SumTree) Total() float64 { return t.sum[1] }

// Min is the smallest priority of the slots ever set (+Inf if none).
func (t *SumTree) Min() float64 { return t.min[1] }

// Find returns the slot whose interval of the running sum holds x, for x
// in [0, Total()). Slots of priority 0 are never returned while any
// priority is positive.
func (t *SumTree) Find(x float64) int {
	i := 1
	for i < t.size {
		left := 2 * i
		if x < t.sum[left] || t.sum[left+1] == 0 {
			i = left
		} else {
			x -= t.sum[left]
			i = left + 1
		}
	}
	k := i - t.size
	// Rounding can walk past the last filled slot; step back to one with
	// mass so a sample is always a stored transition.
	for k > 0 && (k >= t.cap || t.sum[t.size+k] == 0) {
		k--
	}
	return k
}
