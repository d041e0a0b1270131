package models

import "sync"

// Data-parallel training splits a batch into shards with fixed
// boundaries, computes each shard's gradient on its own copy of the model
// (its own Tape and Params), and sums the gradients in a fixed order. The
// arithmetic depends only on the number of shards, never on how many
// cores run them or in what order they finish, so a seed and a shard
// count give the same weights on any machine.

// Parallel calls fn(k) for k in [0, n), each on its own goroutine except
// fn(0), which runs on the caller's, and returns when all have returned.
// With n ≤ 1 it is a plain call. fn must not panic: a goroutine's panic
// cannot be recovered by the caller.
func Parallel(n int, fn func(k int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(n - 1)
	for k := 1; k < n; k++ {
		go func() { defer wg.Done(); fn(k) }()
	}
	fn(0)
	wg.Wait()
}

// ShardBounds returns shard k's half-open range [lo, hi) of n items split
// into shards parts: the parts differ in size by at most one item, and
// depend only on n and shards.
func ShardBounds(k, shards, n int) (lo, hi int) {
	return k * n / shards, (k + 1) * n / shards
}

// SumGrads adds the gradients of srcs[1:] into srcs[0] element by element,
// always in the order srcs[0] + srcs[1] + ... + srcs[len-1], so the sum is
// deterministic; the vector is cut into threads contiguous ranges summed
// concurrently (the per-element order does not change with threads). Every
// vector must be as long as srcs[0].
func SumGrads(srcs [][]float64, threads int) {
	if len(srcs) < 2 {
		return
	}
	dst := srcs[0]
	// Ranges of less than a few thousand values cost more to hand to a
	// goroutine than to add.
	const minRange = 4096
	threads = max(1, min(threads, len(dst)/minRange))
	Parallel(threads, func(k int) {
		lo, hi := ShardBounds(k, threads, len(dst))
		d := dst[lo:hi]
		for _, s := range srcs[1:] {
			s = s[lo:hi:hi]
			for i := range d {
				d[i] += s[i]
			}
		}
	})
}
