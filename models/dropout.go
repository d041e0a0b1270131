package models

import (
	"fmt"
	"math/rand/v2"
)

// Dropout is inverted dropout: in training each element is zeroed with
// probability P and the rest are scaled by 1/(1-P), so that evaluation
// (which passes x through unchanged) sees activations of the same scale.
type Dropout struct {
	P   float64
	rng *rand.Rand
}

// NewDropout returns dropout with drop probability p in [0, 1), its masks
// drawn from seed.
func NewDropout(p float64, seed uint64) (*Dropout, error) {
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("models: dropout probability %v must be in [0, 1)", p)
	}
	return &Dropout{P: p, rng: rand.New(rand.NewPCG(seed, 0xd40f))}, nil
}

// Forward applies dropout to x when train is set and returns x itself
// otherwise. The mask is a constant on the tape, so the gradient is the
// output gradient times the mask.
func (d *Dropout) Forward(t *Tape, x *Tensor, train bool) *Tensor {
	if !train || d.P == 0 {
		return x
	}
	mask := t.Const(x.Rows, x.Cols, nil) // zero-filled, owned by the tape
	keep := 1 / (1 - d.P)
	for i := range mask.Data {
		if d.rng.Float64() >= d.P {
			mask.Data[i] = keep
		}
	}
	return t.Mul(x, mask)
}
