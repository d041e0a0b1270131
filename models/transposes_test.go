package models

import (
	"slices"
	"testing"
)

// Tapes sharing transposes compute the gradients a tape of its own does,
// bit for bit, whatever the team and the rows per shard (including shards
// few enough that gemm would otherwise multiply without transposing), and
// after the weights change and Reset they read the new weights' transposes.
func TestSharedTransposesGiveTheSameGradients(t *testing.T) {
	const in, out = 300, 7
	opts := DefaultModelOptions()
	opts.Hiddens = []int{96, 64}
	master, err := NewFullyConnected(in, out, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	// grad computes the gradient of the outputs' sum of squares over rows rows of inputs on
	// model m with tape tp, into m's gradients (cleared first).
	grad := func(m *FullyConnected, tp *Tape, rows int, seed uint64) []float64 {
		m.Params().ZeroGrad()
		tp.Reset()
		o := m.Forward(tp, tp.Const(rows, in, randVec(seed, rows*in)))
		tp.Backward(tp.Sum(tp.Square(o.Out)))
		return m.Params().Grads()
	}
	for _, size := range []int{1, 2, 3} {
		for _, rows := range []int{2, 40} {
			team := NewTeam(size)
			copies := []*FullyConnected{master}
			for len(copies) < size {
				c, err := NewFullyConnected(in, out, opts, 9)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Params().ShareWeights(master.Params()); err != nil {
					t.Fatal(err)
				}
				copies = append(copies, c)
			}
			shared := NewTransposes(master.Params())
			tapes := make([]*Tape, size)
			for k := range tapes {
				tapes[k] = NewTape()
				tapes[k].ShareTransposes(shared)
			}
			for step := range 3 {
				// Every copy computes the same gradient, concurrently.
				shared.Reset()
				got := make([][]float64, size)
				team.Run(size, func(k int) { got[k] = slices.Clone(grad(copies[k], tapes[k], rows, uint64(step))) })
				want := slices.Clone(grad(master, NewTape(), rows, uint64(step)))
				for k := range got {
					if !slices.Equal(got[k], want) {
						t.Fatalf("team of %d, %d rows, step %d: shard %d's gradient differs from a tape's own", size, rows, step, k)
					}
				}
				w := master.Params().Flat()
				for i, d := range randVec(uint64(100+step), len(w)) {
					w[i] += 0.01 * d
				}
			}
			team.Close()
		}
	}
}
