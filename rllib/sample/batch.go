// Package sample holds what every on-policy algorithm shares about collected
// experience: the SampleBatch, advantage estimation (GAE and discounted
// returns), and episode statistics.
package sample

import "fmt"

// Batch is a set of environment steps in row-major columns.
//
// Rows are grouped in fragments: consecutive rows from one sub-environment in
// time order. A fragment ends at its last row (Boundary), and episodes end
// inside fragments at rows marked Terminated or Truncated. Advantage
// estimation never crosses a fragment boundary or an episode end.
//
// Every field is exported and made of plain slices so that a Batch travels
// between processes with runtime/codec.
type Batch struct {
	// ObsDim, ActDim and DistDim are the widths of the Obs, Actions and
	// DistInputs rows.
	ObsDim, ActDim, DistDim int
	// Obs holds the observations the policy saw (after preprocessing and
	// filtering), one row of ObsDim values per step.
	Obs []float64
	// Actions holds the actions taken (before any clipping to the action
	// space), one row of ActDim values per step.
	Actions []float64
	// Rewards, Terminated and Truncated are the environment's outcome of
	// each step.
	Rewards    []float64
	Terminated []bool
	Truncated  []bool
	// Boundary marks the last row of each fragment.
	Boundary []bool
	// Bootstrap is the value estimate of the next observation for rows where
	// the trajectory is cut without a terminal state: truncated rows (the
	// value of the episode's final observation) and boundary rows that did
	// not end an episode. It is zero elsewhere.
	Bootstrap []float64
	// Logp, VPreds and DistInputs are the behaviour policy's log-likelihood
	// of the action, value estimate and distribution inputs at each step;
	// optional for algorithms that do not use them (nil then).
	Logp       []float64
	VPreds     []float64
	DistInputs []float64
	// Advantages and ValueTargets are filled by ComputeGAE or
	// DiscountedReturns.
	Advantages   []float64
	ValueTargets []float64
	// Episodes lists the episodes that ended while this batch was
	// collected.
	Episodes []Episode
	// SeqLens, set by rollouts of a recurrent policy, cuts the rows into
	// sequences for truncated backpropagation through time: consecutive
	// runs of rows, in row order, of at most max_seq_len steps. A sequence
	// never crosses a fragment boundary or an episode end. StateIn holds
	// the policy's state before each sequence's first step, one row of
	// StateDim values per sequence. All three are empty for feed-forward
	// policies.
	SeqLens  []int
	StateDim int
	StateIn  []float64
}

// Episode summarises one finished episode.
type Episode struct {
	Reward float64
	Length int
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.Rewards) }

// Validate checks that every column has a length consistent with Len.
func (b *Batch) Validate() error {
	n := b.Len()
	check := func(name string, got, want int) error {
		if got != want {
			return fmt.Errorf("sample: batch column %s has %d values, want %d for %d rows", name, got, want, n)
		}
		return nil
	}
	checks := []struct {
		name      string
		got, want int
		optional  bool
	}{
		{"Obs", len(b.Obs), n * b.ObsDim, false},
		{"Actions", len(b.Actions), n * b.ActDim, false},
		{"Terminated", len(b.Terminated), n, false},
		{"Truncated", len(b.Truncated), n, false},
		{"Boundary", len(b.Boundary), n, false},
		{"Bootstrap", len(b.Bootstrap), n, false},
		{"Logp", len(b.Logp), n, true},
		{"VPreds", len(b.VPreds), n, true},
		{"DistInputs", len(b.DistInputs), n * b.DistDim, true},
		{"Advantages", len(b.Advantages), n, true},
		{"ValueTargets", len(b.ValueTargets), n, true},
	}
	for _, c := range checks {
		if c.optional && c.got == 0 {
			continue
		}
		if err := check(c.name, c.got, c.want); err != nil {
			return err
		}
	}
	return b.validateSeqs()
}

// Concat joins batches in order into one. Widths must agree; optional
// columns are kept only when every batch has them.
func Concat(batches ...Batch) (Batch, error) {
	var out Batch
	if len(batches) == 0 {
		return out, nil
	}
	first := batches[0]
	out.ObsDim, out.ActDim, out.DistDim = first.ObsDim, first.ActDim, first.DistDim
	has := func(col func(*Batch) []float64) bool {
		for i := range batches {
			if batches[i].Len() > 0 && len(col(&batches[i])) == 0 {
				return false
			}
		}
		return true
	}
	keepLogp := has(func(b *Batch) []float64 { return b.Logp })
	keepV := has(func(b *Batch) []float64 { return b.VPreds })
	keepDist := has(func(b *Batch) []float64 { return b.DistInputs })
	keepAdv := has(func(b *Batch) []float64 { return b.Advantages })
	keepTarg := has(func(b *Batch) []float64 { return b.ValueTargets })
	// The columns are sized once: growing them batch by batch would copy
	// image observations (megabytes a batch) again at every doubling.
	rows := 0
	for i := range batches {
		rows += batches[i].Len()
	}
	if rows > 0 {
		out.Obs = make([]float64, 0, rows*out.ObsDim)
		out.Actions = make([]float64, 0, rows*out.ActDim)
		if keepDist {
			out.DistInputs = make([]float64, 0, rows*out.DistDim)
		}
	}
	for i := range batches {
		b := &batches[i]
		if err := b.Validate(); err != nil {
			return Batch{}, fmt.Errorf("sample: concat batch %d: %w", i, err)
		}
		if b.ObsDim != out.ObsDim || b.ActDim != out.ActDim || (keepDist && b.DistDim != out.DistDim) {
			return Batch{}, fmt.Errorf("sample: concat batch %d has widths obs %d, action %d, dist %d; batch 0 has %d, %d, %d",
				i, b.ObsDim, b.ActDim, b.DistDim, out.ObsDim, out.ActDim, out.DistDim)
		}
		out.Obs = append(out.Obs, b.Obs...)
		out.Actions = append(out.Actions, b.Actions...)
		out.Rewards = append(out.Rewards, b.Rewards...)
		out.Terminated = append(out.Terminated, b.Terminated...)
		out.Truncated = append(out.Truncated, b.Truncated...)
		out.Boundary = append(out.Boundary, b.Boundary...)
		out.Bootstrap = append(out.Bootstrap, b.Bootstrap...)
		if keepLogp {
			out.Logp = append(out.Logp, b.Logp...)
		}
		if keepV {
			out.VPreds = append(out.VPreds, b.VPreds...)
		}
		if keepDist {
			out.DistInputs = append(out.DistInputs, b.DistInputs...)
		}
		if keepAdv {
			out.Advantages = append(out.Advantages, b.Advantages...)
		}
		if keepTarg {
			out.ValueTargets = append(out.ValueTargets, b.ValueTargets...)
		}
		out.Episodes = append(out.Episodes, b.Episodes...)
	}
	return out, concatSeqs(&out, batches)
}

// Resize returns xs with length n, reusing its array when it has room
// (the values are then the old ones) and allocating a zeroed one when not:
// the buffers an algorithm refills every step keep their memory.
func Resize(xs []float64, n int) []float64 {
	if cap(xs) >= n {
		return xs[:n]
	}
	return make([]float64, n)
}
