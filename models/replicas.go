package models

import "fmt"

// Replicas computes a gradient over a batch split into fixed shards, one
// shard per copy of a model, run by a Team: the supervised examples'
// training steps use it. The copies share the master's weights (see
// Params.ShareWeights) and keep gradients of their own, which Grad sums
// into the master's in shard order. The shard bounds depend only on the
// batch size and the number of copies, so a seed and a thread count give
// the same weights on any machine.
type Replicas struct {
	team   *Team
	params []*Params // params[0] is the master's
	tapes  []*Tape
	grads  [][]float64
	losses []float64
	// tr shares the weights' transposes between the replicas' backward
	// passes (nil with one replica).
	tr *Transposes
}

// NewReplicas returns replicas of master run by team: copies are models
// built like the master's (same parameter names and shapes), one for each
// of the team's goroutines but the caller's, and are made to share the
// master's weights. The team stays the caller's to close.
func NewReplicas(team *Team, master *Params, copies []*Params) (*Replicas, error) {
	if len(copies) != team.Size()-1 {
		return nil, fmt.Errorf("models: NewReplicas: %d copies for a team of %d; give one copy per goroutine but the caller's", len(copies), team.Size())
	}
	r := &Replicas{team: team, params: append([]*Params{master}, copies...)}
	for _, p := range r.params {
		if p != master {
			if err := p.ShareWeights(master); err != nil {
				return nil, err
			}
		}
		r.tapes = append(r.tapes, NewTape())
		r.grads = append(r.grads, p.Grads())
	}
	r.losses = make([]float64, len(r.params))
	if len(r.params) > 1 {
		r.tr = NewTransposes(master)
		for _, t := range r.tapes {
			t.ShareTransposes(r.tr)
		}
	}
	return r, nil
}

// Shards is the number of shards a batch of n items is split into: one
// per replica, but no more than n.
func (r *Replicas) Shards(n int) int { return max(1, min(len(r.params), n)) }

// Grad sets the master's gradients to the sum of every shard's. It splits
// n items into Shards(n) parts (ShardBounds) and calls shard(k, tape, lo,
// hi) for each on the team: shard records part k's loss on tape with
// replica k's model (k = 0 is the master's), backpropagates it (its
// gradients start at zero) and returns the loss. Grad returns the losses
// added in shard order.
func (r *Replicas) Grad(n int, shard func(k int, t *Tape, lo, hi int) float64) float64 {
	shards := r.Shards(n)
	r.tr.Reset() // the weights may have changed since the last call
	// The shards and the sum are one meeting of the team. Each shard's
	// gradient is cleared on the shard's own goroutine (the sum only
	// reads it).
	r.team.SumStep(r.grads[:shards], shards, func(k int) {
		r.params[k].ZeroGrad()
		lo, hi := ShardBounds(k, shards, n)
		r.losses[k] = shard(k, r.tapes[k], lo, hi)
	}, nil)
	loss := 0.0
	for _, l := range r.losses[:shards] {
		loss += l
	}
	return loss
}
