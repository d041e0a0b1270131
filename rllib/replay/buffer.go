// Package replay holds experience replay for off-policy algorithms: a ring
// buffer of transitions sampled uniformly or in proportion to priority
// (prioritised replay with a sum-tree, importance-sampling weights and
// priority updates), and n-step transition assembly from environment steps.
// DQN uses it; any algorithm that learns from stored transitions can.
package replay

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/rllib/sample"
)

// Transitions is a set of transitions in row-major columns. A transition
// is (Obs, Action) followed by the discounted reward sum Reward of its
// n steps and the observation NextObs reached after them; Discount is
// γ^k for the k steps summed when the episode went on (the target
// bootstraps from NextObs with that factor) and 0 when it terminated.
// Every field is exported and made of plain slices so that Transitions
// travel between processes with runtime/codec.
type Transitions struct {
	ObsDim, ActDim int
	Obs            []float64
	Actions        []float64
	Rewards        []float64
	NextObs        []float64
	Discounts      []float64
}

// Len is the number of transitions.
func (t *Transitions) Len() int { return len(t.Rewards) }

// Reset empties t, keeping its memory.
func (t *Transitions) Reset() {
	t.Obs, t.Actions, t.Rewards, t.NextObs, t.Discounts = t.Obs[:0], t.Actions[:0], t.Rewards[:0], t.NextObs[:0], t.Discounts[:0]
}

// Append adds one transition.
func (t *Transitions) Append(obs, action []float64, reward float64, nextObs []float64, discount float64) {
	t.Obs = append(t.Obs, obs...)
	t.Actions = append(t.Actions, action...)
	t.Rewards = append(t.Rewards, reward)
	t.NextObs = append(t.NextObs, nextObs...)
	t.Discounts = append(t.Discounts, discount)
}

// Validate checks that the columns agree with Len and the widths.
func (t *Transitions) Validate() error {
	n := t.Len()
	if len(t.Obs) != n*t.ObsDim || len(t.NextObs) != n*t.ObsDim || len(t.Actions) != n*t.ActDim || len(t.Discounts) != n {
		return fmt.Errorf("replay: transitions with %d rewards have %d obs, %d next obs, %d action and %d discount values (widths obs %d, action %d)",
			n, len(t.Obs), len(t.NextObs), len(t.Actions), len(t.Discounts), t.ObsDim, t.ActDim)
	}
	return nil
}

// Batch is a sample drawn from a Buffer: the transitions, their slots in
// the buffer (for UpdatePriorities) and their importance-sampling weights
// (all 1 for uniform sampling).
type Batch struct {
	Transitions
	Indices []int
	Weights []float64
}

// Config configures a Buffer.
type Config struct {
	// Capacity is the number of transitions kept; the oldest are
	// overwritten first.
	Capacity int
	// ObsDim and ActDim are the widths of an observation and an action.
	ObsDim, ActDim int
	// Prioritized samples transition i with probability p_i^α / Σ p^α
	// instead of uniformly.
	Prioritized bool
	// Alpha is α, how strongly priorities shape sampling (0: uniform).
	Alpha float64
	// Eps (positive for prioritised replay) is added to every updated
	// priority so that no transition's probability becomes zero.
	Eps float64
}

// Buffer is a ring buffer of transitions with uniform or proportional
// prioritised sampling. New transitions get the largest priority seen so
// far, so each is likely to be replayed at least once. It is not safe for
// concurrent use.
type Buffer struct {
	cfg  Config
	data Transitions // columns preallocated to Capacity rows
	next int
	size int
	tree *SumTree // nil for uniform sampling
	// maxPriority is the largest priority given so far (before ^α).
	maxPriority float64
}

// New returns an empty buffer.
func New(cfg Config) (*Buffer, error) {
	if cfg.Capacity < 1 || cfg.ObsDim < 1 || cfg.ActDim < 1 {
		return nil, fmt.Errorf("replay: capacity %d, observation width %d and action width %d must all be at least 1", cfg.Capacity, cfg.ObsDim, cfg.ActDim)
	}
	if cfg.Prioritized && (cfg.Alpha < 0 || math.IsNaN(cfg.Alpha) || math.IsInf(cfg.Alpha, 0)) {
		return nil, fmt.Errorf("replay: prioritized replay alpha %v must be finite and 0 or more", cfg.Alpha)
	}
	if cfg.Prioritized && !(cfg.Eps > 0 && cfg.Eps < math.Inf(1)) {
		// A zero priority would give its transition an infinite
		// importance weight and make every other weight 0.
		return nil, fmt.Errorf("replay: prioritized replay eps %v must be positive", cfg.Eps)
	}
	c := cfg.Capacity
	b := &Buffer{cfg: cfg, maxPriority: 1, data: Transitions{
		ObsDim: cfg.ObsDim, ActDim: cfg.ActDim,
		Obs: make([]float64, c*cfg.ObsDim), NextObs: make([]float64, c*cfg.ObsDim),
		Actions: make([]float64, c*cfg.ActDim), Rewards: make([]float64, c), Discounts: make([]float64, c),
	}}
	if cfg.Prioritized {
		b.tree = NewSumTree(c)
	}
	return b, nil
}

// Len is the number of transitions stored.
func (b *Buffer) Len() int { return b.size }

// Capacity is the most transitions the buffer keeps.
func (b *Buffer) Capacity() int { return b.cfg.Capacity }

// Prioritized reports whether sampling follows priorities.
func (b *Buffer) Prioritized() bool { return b.tree != nil }

// Add stores every transition of t, overwriting the oldest when full.
func (b *Buffer) Add(t *Transitions) error {
	if t.ObsDim != b.cfg.ObsDim || t.ActDim != b.cfg.ActDim {
		return fmt.Errorf("replay: adding transitions of widths obs %d, action %d to a buffer of widths %d, %d", t.ObsDim, t.ActDim, b.cfg.ObsDim, b.cfg.ActDim)
	}
	if err := t.Validate(); err != nil {
		return err
	}
	od, ad := b.cfg.ObsDim, b.cfg.ActDim
	var p float64
	if b.tree != nil {
		p = math.Pow(b.maxPriority, b.cfg.Alpha)
	}
	for i := range t.Len() {
		k := b.next
		copy(b.data.Obs[k*od:(k+1)*od], t.Obs[i*od:(i+1)*od])
		copy(b.data.NextObs[k*od:(k+1)*od], t.NextObs[i*od:(i+1)*od])
		copy(b.data.Actions[k*ad:(k+1)*ad], t.Actions[i*ad:(i+1)*ad])
		b.data.Rewards[k] = t.Rewards[i]
		b.data.Discounts[k] = t.Discounts[i]
		if b.tree != nil {
			b.tree.Set(k, p)
		}
		b.next = (b.next + 1) % b.cfg.Capacity
		b.size = min(b.size+1, b.cfg.Capacity)
	}
	return nil
}

// ErrEmpty is returned when sampling from an empty buffer.
var ErrEmpty = errors.New("replay: cannot sample from an empty buffer")

// Sample draws n transitions into out, reusing its memory. Uniform
// buffers draw slots with replacement, each with probability 1/Len, and
// set every weight to 1. Prioritised buffers use stratified sampling: the
// total priority is cut into n equal segments and one point is drawn in
// each, and the weight of slot i is (N·P(i))^-β divided by the largest
// possible weight, so weights lie in (0, 1] (Schaul et al. 2016).
func (b *Buffer) Sample(rng *rand.Rand, n int, beta float64, out *Batch) error {
	if b.size == 0 {
		return ErrEmpty
	}
	if n < 1 {
		return fmt.Errorf("replay: sample size %d must be at least 1", n)
	}
	od, ad := b.cfg.ObsDim, b.cfg.ActDim
	out.ObsDim, out.ActDim = od, ad
	out.Obs = sample.Resize(out.Obs, n*od)
	out.NextObs = sample.Resize(out.NextObs, n*od)
	out.Actions = sample.Resize(out.Actions, n*ad)
	out.Rewards = sample.Resize(out.Rewards, n)
	out.Discounts = sample.Resize(out.Discounts, n)
	out.Weights = sample.Resize(out.Weights, n)
	if cap(out.Indices) < n {
		out.Indices = make([]int, n)
	}
	out.Indices = out.Indices[:n]
	if b.tree == nil {
		for i := range n {
			out.Indices[i] = rng.IntN(b.size)
			out.Weights[i] = 1
		}
	} else {
		total := b.tree.Total()
		seg := total / float64(n)
		// The largest weight belongs to the smallest probability.
		pMin := b.tree.Min() / total
		maxW := math.Pow(float64(b.size)*pMin, -beta)
		for i := range n {
			x := (float64(i) + rng.Float64()) * seg
			k := b.tree.Find(min(x, math.Nextafter(total, 0)))
			out.Indices[i] = k
			p := b.tree.Get(k) / total
			out.Weights[i] = math.Pow(float64(b.size)*p, -beta) / maxW
		}
	}
	for i, k := range out.Indices {
		copy(out.Obs[i*od:(i+1)*od], b.data.Obs[k*od:(k+1)*od])
		copy(out.NextObs[i*od:(i+1)*od], b.data.NextObs[k*od:(k+1)*od])
		copy(out.Actions[i*ad:(i+1)*ad], b.data.Actions[k*ad:(k+1)*ad])
		out.Rewards[i] = b.data.Rewards[k]
		out.Discounts[i] = b.data.Discounts[k]
	}
	return nil
}

// UpdatePriorities sets the priorities of the slots idx (as returned in
// Batch.Indices) to priorities[i] + Eps, typically the absolute TD errors.
// It does nothing for a uniform buffer.
func (b *Buffer) UpdatePriorities(idx []int, priorities []float64) error {
	if b.tree == nil {
		return nil
	}
	if len(idx) != len(priorities) {
		return fmt.Errorf("replay: %d indices but %d priorities", len(idx), len(priorities))
	}
	for i, k := range idx {
		p := priorities[i]
		if k < 0 || k >= b.size {
			return fmt.Errorf("replay: priority update for slot %d, but the buffer holds %d transitions", k, b.size)
		}
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return fmt.Errorf("replay: priority %v for slot %d must be finite and 0 or more", p, k)
		}
		p += b.cfg.Eps
		b.maxPriority = math.Max(b.maxPriority, p)
		b.tree.Set(k, math.Pow(p, b.cfg.Alpha))
	}
	return nil
}

// Priority is slot k's sampling priority p^α (0 for a uniform buffer).
func (b *Buffer) Priority(k int) float64 {
	if b.tree == nil {
		return 0
	}
	return b.tree.Get(k)
}
