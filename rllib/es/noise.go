package es

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gray-ml/gray"
)

// NewNoise returns size standard normal values drawn from a generator
// seeded by seed: the same seed gives the same table in every process.
// float32 halves the memory of the table at no cost to ES, whose
// perturbations are scaled by a small σ anyway.
func NewNoise(seed int64, size int) ([]float32, error) {
	if size < 1 {
		return nil, fmt.Errorf("ES: noise table size %d: must be positive", size)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e6f697365)) // "noise"
	out := make([]float32, size)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out, nil
}

// createNoise is the remote task that builds the shared noise table once:
// its result stays in the object store, and every worker actor is started
// with a reference to it. It reserves no CPU: it runs once, briefly, at
// start-up, and must not wait behind workers that hold every CPU.
var createNoise = gray.Func2("es.createNoise", func(ctx context.Context, seed int64, size int) ([]float32, error) {
	return NewNoise(seed, size)
}, gray.CPUs(0))

// noiseTable reads perturbations out of the shared noise block.
type noiseTable struct{ data []float32 }

// sampleIndex draws an offset at which dim values fit in the table.
func (n noiseTable) sampleIndex(rng *rand.Rand, dim int) int {
	return rng.IntN(len(n.data) - dim + 1)
}

// get returns the dim values at offset i.
func (n noiseTable) get(i, dim int) []float32 { return n.data[i : i+dim] }

// checkFits reports a table too small for a policy of dim weights.
func (n noiseTable) checkFits(dim int) error {
	if len(n.data) < dim {
		return fmt.Errorf("ES: the noise table holds %d values but the policy has %d weights; set noise_size to at least %d", len(n.data), dim, dim)
	}
	return nil
}

// centeredRanks maps x to the ranks of its values scaled to [-0.5, 0.5]:
// the smallest becomes -0.5, the largest 0.5, evenly spaced between. Ties
// are ranked in order of appearance, so the result is deterministic. It
// makes the update invariant to the scale of the returns and robust to
// outliers (Salimans et al., section 2.1).
func centeredRanks(x []float64) []float64 {
	n := len(x)
	out := make([]float64, n)
	if n < 2 {
		return out
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sortStable(idx, func(a, b int) bool { return x[a] < x[b] })
	for rank, i := range idx {
		out[i] = float64(rank)/float64(n-1) - 0.5
	}
	return out
}

func sortStable(idx []int, less func(a, b int) bool) {
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
}
