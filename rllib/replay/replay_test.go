package replay

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fill adds n one-dimensional transitions whose observation is their
// number, so a sample says which transitions it drew.
func fill(t *testing.T, b *Buffer, from, n int) {
	t.Helper()
	tr := Transitions{ObsDim: 1, ActDim: 1}
	for i := from; i < from+n; i++ {
		tr.Append([]float64{float64(i)}, []float64{0}, float64(i), []float64{float64(i + 1)}, 0.99)
	}
	if err := b.Add(&tr); err != nil {
		t.Fatal(err)
	}
}

func newBuffer(t *testing.T, cfg Config) *Buffer {
	t.Helper()
	cfg.ObsDim, cfg.ActDim = 1, 1
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counts draws draws transitions in batches of 32 and counts how often
// each observation value appears.
func counts(t *testing.T, b *Buffer, draws int, beta float64) (map[float64]int, *Batch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	c := map[float64]int{}
	var out Batch
	for range draws / 32 {
		if err := b.Sample(rng, 32, beta, &out); err != nil {
			t.Fatal(err)
		}
		for i, o := range out.Obs {
			c[o]++
			if out.Rewards[i] != o || out.NextObs[i] != o+1 || out.Discounts[i] != 0.99 {
				t.Fatalf("sampled row %d mixes transitions: obs %v reward %v next %v", i, o, out.Rewards[i], out.NextObs[i])
			}
		}
	}
	return c, &out
}

func TestUniformSampling(t *testing.T) {
	b := newBuffer(t, Config{Capacity: 10})
	if err := b.Sample(rand.New(rand.NewPCG(1, 1)), 4, 0, &Batch{}); !errors.Is(err, ErrEmpty) {
		t.Fatalf("sampling an empty buffer: %v, want ErrEmpty", err)
	}
	fill(t, b, 0, 25) // wraps: keeps 15..24
	if b.Len() != 10 {
		t.Fatalf("Len = %d, want the capacity 10", b.Len())
	}
	const draws = 64_000
	c, out := counts(t, b, draws, 0.4)
	for v := 15.0; v < 25; v++ {
		if f := float64(c[v]) / draws; math.Abs(f-0.1) > 0.01 {
			t.Errorf("transition %v drawn with frequency %.4f, want 0.1 ± 0.01", v, f)
		}
	}
	if len(c) != 10 {
		t.Errorf("drew %d distinct transitions, want the 10 newest (oldest overwritten): %v", len(c), c)
	}
	for _, w := range out.Weights {
		if w != 1 {
			t.Fatalf("uniform sampling gave importance weight %v, want 1", w)
		}
	}
	if err := b.UpdatePriorities([]int{0}, []float64{5}); err != nil {
		t.Errorf("UpdatePriorities on a uniform buffer: %v, want a no-op", err)
	}
}

func TestPrioritizedSamplingProportional(t *testing.T) {
	const alpha, eps = 0.7, 1e-6
	b := newBuffer(t, Config{Capacity: 8, Prioritized: true, Alpha: alpha, Eps: eps})
	fill(t, b, 0, 8)
	idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
	prios := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	if err := b.UpdatePriorities(idx, prios); err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, p := range prios {
		total += math.Pow(p+eps, alpha)
	}
	const draws = 96_000
	const beta = 0.5
	c, out := counts(t, b, draws, beta)
	for i, p := range prios {
		want := math.Pow(p+eps, alpha) / total
		if f := float64(c[float64(i)]) / draws; math.Abs(f-want) > 0.1*want {
			t.Errorf("transition %d of priority %v drawn with frequency %.4f, want %.4f ± 10%%", i, p, f, want)
		}
	}
	// Importance weights: (N·P(i))^-β normalised by the largest, that of
	// the least likely transition.
	pMin := math.Pow(1+eps, alpha) / total
	for k, slot := range out.Indices {
		pi := math.Pow(prios[slot]+eps, alpha) / total
		want := math.Pow(8*pi, -beta) / math.Pow(8*pMin, -beta)
		if math.Abs(out.Weights[k]-want) > 1e-9 {
			t.Errorf("slot %d: importance weight %v, want %v", slot, out.Weights[k], want)
		}
		if out.Weights[k] > 1 {
			t.Errorf("importance weight %v above 1", out.Weights[k])
		}
	}
}

func TestPriorityUpdates(t *testing.T) {
	b := newBuffer(t, Config{Capacity: 4, Prioritized: true, Alpha: 1, Eps: 1e-6})
	fill(t, b, 0, 4)
	// New transitions get the largest priority seen so far (1 initially).
	for k := range 4 {
		if p := b.Priority(k); p != 1 {
			t.Errorf("new transition %d has priority %v, want 1", k, p)
		}
	}
	if err := b.UpdatePriorities([]int{0, 1, 2, 3}, []float64{0, 0, 1000, 0}); err != nil {
		t.Fatal(err)
	}
	c, _ := counts(t, b, 3200, 1)
	if c[2] < 3150 {
		t.Errorf("transition of priority 1000 among priorities 1e-6 drawn %d of 3200 times", c[2])
	}
	fill(t, b, 4, 1) // overwrites slot 0 with the max priority, 1000
	if p := b.Priority(0); math.Abs(p-1000) > 1e-3 {
		t.Errorf("a new transition after an update has priority %v, want the largest so far (1000)", p)
	}
	bad := []struct {
		idx   []int
		prios []float64
	}{
		{[]int{0}, []float64{math.NaN()}},
		{[]int{0}, []float64{-1}},
		{[]int{9}, []float64{1}},
		{[]int{0, 1}, []float64{1}},
	}
	for _, tc := range bad {
		if err := b.UpdatePriorities(tc.idx, tc.prios); err == nil {
			t.Errorf("UpdatePriorities(%v, %v): want an error", tc.idx, tc.prios)
		}
	}
	if _, err := New(Config{Capacity: 4, ObsDim: 1, ActDim: 1, Prioritized: true, Alpha: 0.6}); err == nil {
		t.Error("prioritized buffer with eps 0: want an error")
	}
}

func TestSumTree(t *testing.T) {
	tr := NewSumTree(5)
	ps := []float64{1, 0, 3, 2, 4}
	for k, p := range ps {
		tr.Set(k, p)
	}
	if tr.Total() != 10 || tr.Min() != 0 {
		t.Fatalf("total %v min %v, want 10 and 0", tr.Total(), tr.Min())
	}
	// Running sums: [0,1) slot 0, [1,4) slot 2, [4,6) slot 3, [6,10) slot 4.
	for _, tc := range []struct {
		x    float64
		want int
	}{{0, 0}, {0.99, 0}, {1, 2}, {3.99, 2}, {4, 3}, {5.5, 3}, {6, 4}, {9.999, 4}} {
		if got := tr.Find(tc.x); got != tc.want {
			t.Errorf("Find(%v) = %d, want %d", tc.x, got, tc.want)
		}
	}
}

func TestNStep(t *testing.T) {
	const gamma = 0.5
	obs := func(i int) []float64 { return []float64{float64(i)} }
	act := []float64{1}
	type want struct {
		obs, reward, next, discount float64
	}
	check := func(t *testing.T, got *Transitions, ws []want) {
		t.Helper()
		if got.Len() != len(ws) {
			t.Fatalf("%d transitions, want %d: %+v", got.Len(), len(ws), got)
		}
		for i, w := range ws {
			g := want{got.Obs[i], got.Rewards[i], got.NextObs[i], got.Discounts[i]}
			if math.Abs(g.reward-w.reward) > 1e-12 || g.obs != w.obs || g.next != w.next || g.discount != w.discount {
				t.Errorf("transition %d = %+v, want %+v", i, g, w)
			}
		}
	}
	tests := []struct {
		name       string
		n          int
		terminated bool
		want       []want
	}{
		// Rewards 1, 2, 3, 4 from observations 0..3; the episode ends at
		// the fourth step in observation 4.
		{"3-step terminated", 3, true, []want{
			{0, 1 + 0.5*2 + 0.25*3, 3, 0.125},
			{1, 2 + 0.5*3 + 0.25*4, 4, 0},
			{2, 3 + 0.5*4, 4, 0},
			{3, 4, 4, 0},
		}},
		{"3-step truncated", 3, false, []want{
			{0, 1 + 0.5*2 + 0.25*3, 3, 0.125},
			{1, 2 + 0.5*3 + 0.25*4, 4, 0.125},
			{2, 3 + 0.5*4, 4, 0.25},
			{3, 4, 4, 0.5},
		}},
		{"1-step terminated", 1, true, []want{{0, 1, 1, 0.5}, {1, 2, 2, 0.5}, {2, 3, 3, 0.5}, {3, 4, 4, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewNStep(tc.n, gamma, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			out := Transitions{ObsDim: 1, ActDim: 1}
			for i := range 4 {
				last := i == 3
				s.Add(obs(i), act, float64(i+1), obs(i+1), last && tc.terminated, last && !tc.terminated, &out)
			}
			check(t, &out, tc.want)
			if s.Pending() != 0 {
				t.Errorf("%d steps still pending after the episode ended", s.Pending())
			}
			// The next episode starts clean: nothing of the last leaks in.
			out.Reset()
			for i := range tc.n {
				s.Add(obs(10+i), act, 1, obs(11+i), false, false, &out)
			}
			if out.Len() != 1 || out.Obs[0] != 10 {
				t.Errorf("first transition of the next episode: %+v", out)
			}
		})
	}
	if _, err := NewNStep(0, gamma, 1, 1); err == nil {
		t.Error("n-step horizon 0: want an error")
	}
}

func TestSampleReusesMemory(t *testing.T) {
	b := newBuffer(t, Config{Capacity: 100, Prioritized: true, Alpha: 0.6, Eps: 1e-6})
	fill(t, b, 0, 100)
	rng := rand.New(rand.NewPCG(3, 4))
	var out Batch
	_ = b.Sample(rng, 64, 0.4, &out)
	allocs := testing.AllocsPerRun(100, func() {
		_ = b.Sample(rng, 64, 0.4, &out)
		_ = b.UpdatePriorities(out.Indices, out.Rewards)
	})
	if allocs != 0 {
		t.Errorf("Sample + UpdatePriorities allocate %v times per call, want 0", allocs)
	}
	if !slices.ContainsFunc(out.Indices, func(i int) bool { return i > 0 }) {
		t.Error("sampled only slot 0")
	}
}
