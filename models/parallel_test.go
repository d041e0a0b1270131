package models

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The shards of n items cover [0, n) in order, without gaps or overlaps,
// and differ in size by at most one.
func TestShardBounds(t *testing.T) {
	for _, tc := range []struct{ shards, n int }{{1, 10}, {3, 10}, {4, 4}, {16, 256}, {7, 1000}} {
		next, lo0, hi0 := 0, tc.n, 0
		for k := range tc.shards {
			lo, hi := ShardBounds(k, tc.shards, tc.n)
			if lo != next || hi < lo {
				t.Fatalf("%d shards of %d: shard %d is [%d, %d), want it to start at %d", tc.shards, tc.n, k, lo, hi, next)
			}
			next = hi
			lo0, hi0 = min(lo0, hi-lo), max(hi0, hi-lo)
		}
		if next != tc.n || hi0-lo0 > 1 {
			t.Errorf("%d shards of %d: end at %d, sizes %d..%d", tc.shards, tc.n, next, lo0, hi0)
		}
	}
}

// SumGrads gives the left-to-right sum bit for bit, however many threads
// add the ranges.
func TestSumGradsOrderFixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 20_000
	fresh := func() [][]float64 {
		srcs := make([][]float64, 5)
		r := rand.New(rand.NewPCG(3, 4))
		for i := range srcs {
			srcs[i] = make([]float64, n)
			for j := range srcs[i] {
				srcs[i][j] = r.NormFloat64() * float64(1+j%7)
			}
		}
		return srcs
	}
	want := fresh()
	for j := range n {
		for _, s := range want[1:] {
			want[0][j] += s[j]
		}
	}
	for _, threads := range []int{1, 2, 3, 8, 1 + rng.IntN(16)} {
		got := fresh()
		SumGrads(got, threads)
		if !slices.Equal(got[0], want[0]) {
			t.Errorf("%d threads: the sum differs from the left-to-right one", threads)
		}
	}
}

// Parallel runs every index once.
func TestParallelRunsEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 9} {
		seen := make([]int, n)
		Parallel(n, func(k int) { seen[k]++ })
		for k, c := range seen {
			if c != 1 {
				t.Errorf("Parallel(%d): fn(%d) ran %d times", n, k, c)
			}
		}
	}
}
