package sample

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// gaeBatch builds a one-column batch for advantage tests.
func gaeBatch(rewards, vpreds, bootstrap []float64, term, trunc, boundary []bool) Batch {
	n := len(rewards)
	return Batch{
		ObsDim: 1, ActDim: 1,
		Obs: make([]float64, n), Actions: make([]float64, n),
		Rewards: rewards, VPreds: vpreds, Bootstrap: bootstrap,
		Terminated: term, Truncated: trunc, Boundary: boundary,
	}
}

func TestComputeGAE(t *testing.T) {
	const g, l = 0.9, 0.8
	f, T := false, true
	tests := []struct {
		name    string
		b       Batch
		wantAdv []float64
	}{
		{
			// Three steps ending in a terminal state: no bootstrap.
			// delta2 = 1 - 3 = -2; A2 = -2
			// delta1 = 1 + 0.9*3 - 2 = 1.7; A1 = 1.7 + 0.72*(-2) = 0.26
			// delta0 = 1 + 0.9*2 - 1 = 1.8; A0 = 1.8 + 0.72*0.26 = 1.9872
			name:    "terminated",
			b:       gaeBatch([]float64{1, 1, 1}, []float64{1, 2, 3}, []float64{0, 0, 0}, []bool{f, f, T}, []bool{f, f, f}, []bool{f, f, T}),
			wantAdv: []float64{1.9872, 0.26, -2},
		},
		{
			// The same steps cut by a time limit: the final observation's
			// value (10) is bootstrapped. delta2 = 1 + 9 - 3 = 7; A2 = 7
			// delta1 = 1.7; A1 = 1.7 + 0.72*7 = 6.74
			// delta0 = 1.8; A0 = 1.8 + 0.72*6.74 = 6.6528
			name:    "truncated",
			b:       gaeBatch([]float64{1, 1, 1}, []float64{1, 2, 3}, []float64{0, 0, 10}, []bool{f, f, f}, []bool{f, f, T}, []bool{f, f, T}),
			wantAdv: []float64{6.6528, 6.74, 7},
		},
		{
			// An episode that terminates at row 1 and a new one cut at the
			// fragment boundary (row 2, bootstrap 5): the recursion must not
			// leak across the episode end.
			// A2 = 2 + 4.5 - 3 = 3.5; A1 = 0 - 2 = -2 (terminal);
			// A0 = 1 + 1.8 - 1 + 0.72*(-2) = 0.36
			name:    "episode end inside a fragment",
			b:       gaeBatch([]float64{1, 0, 2}, []float64{1, 2, 3}, []float64{0, 0, 5}, []bool{f, T, f}, []bool{f, f, f}, []bool{f, f, T}),
			wantAdv: []float64{0.36, -2, 3.5},
		},
		{
			// Two fragments of one row each from different sub-environments:
			// each bootstraps its own value.
			name:    "two fragments",
			b:       gaeBatch([]float64{1, 1}, []float64{0, 0}, []float64{2, 4}, []bool{f, f}, []bool{f, f}, []bool{T, T}),
			wantAdv: []float64{2.8, 4.6},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			if err := ComputeGAE(&b, g, l); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.wantAdv {
				if !near(b.Advantages[i], want) {
					t.Errorf("advantage[%d] = %v, want %v", i, b.Advantages[i], want)
				}
				if !near(b.ValueTargets[i], want+b.VPreds[i]) {
					t.Errorf("value target[%d] = %v, want %v", i, b.ValueTargets[i], want+b.VPreds[i])
				}
			}
		})
	}
}

func TestGAEWithLambdaOneIsDiscountedReturn(t *testing.T) {
	f, T := false, true
	b := gaeBatch([]float64{1, 2, 3, 4}, []float64{0.5, -1, 2, 1}, []float64{0, 7, 0, 3},
		[]bool{f, f, f, f}, []bool{f, T, f, f}, []bool{f, f, f, T})
	if err := ComputeGAE(&b, 0.95, 1); err != nil {
		t.Fatal(err)
	}
	gae := append([]float64(nil), b.ValueTargets...)
	if err := DiscountedReturns(&b, 0.95); err != nil {
		t.Fatal(err)
	}
	// Returns: row1 = 2 + 0.95*7 = 8.65, row0 = 1 + 0.95*8.65;
	// row3 = 4 + 0.95*3, row2 = 3 + 0.95*row3.
	want := []float64{1 + 0.95*8.65, 8.65, 3 + 0.95*(4+0.95*3), 4 + 0.95*3}
	for i := range want {
		if !near(b.ValueTargets[i], want[i]) || !near(gae[i], want[i]) {
			t.Errorf("row %d: returns %v, GAE(λ=1) targets %v, want %v", i, b.ValueTargets[i], gae[i], want[i])
		}
	}
}

func TestGAEErrors(t *testing.T) {
	f := false
	b := gaeBatch([]float64{1}, nil, []float64{0}, []bool{f}, []bool{f}, []bool{true})
	if err := ComputeGAE(&b, 0.9, 0.9); err == nil {
		t.Error("GAE without value predictions: want an error")
	}
	b.VPreds = []float64{0}
	if err := ComputeGAE(&b, 1.5, 0.9); err == nil {
		t.Error("gamma 1.5: want an error")
	}
	b.Rewards = []float64{1, 2}
	if err := ComputeGAE(&b, 0.9, 0.9); err == nil {
		t.Error("ragged columns: want an error")
	}
}

func TestStandardizeAndExplainedVariance(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	Standardize(xs)
	m, s := MeanStd(xs)
	if !near(m, 0) || !near(s, 1) {
		t.Errorf("standardized mean %v std %v, want 0 and 1", m, s)
	}
	if ev := ExplainedVariance([]float64{1, 2, 3}, []float64{1, 2, 3}); !near(ev, 1) {
		t.Errorf("perfect predictions: explained variance %v, want 1", ev)
	}
	if ev := ExplainedVariance([]float64{2, 2, 2}, []float64{1, 2, 3}); !near(ev, 0) {
		t.Errorf("constant predictions: explained variance %v, want 0", ev)
	}
}

func TestEpisodeWindow(t *testing.T) {
	w := NewEpisodeWindow(3)
	if s := w.Stats(); !math.IsNaN(s.RewardMean) {
		t.Errorf("empty window mean %v, want NaN", s.RewardMean)
	}
	for i := 1; i <= 5; i++ {
		w.Add(Episode{Reward: float64(i), Length: i * 10})
	}
	s := w.Stats()
	if s.RewardMean != 4 || s.RewardMin != 3 || s.RewardMax != 5 || s.LenMean != 40 || w.Total() != 5 {
		t.Errorf("window stats %+v total %d, want mean 4 min 3 max 5 len 40 total 5", s, w.Total())
	}
	if eps := w.Episodes(); eps[0].Reward != 3 || eps[2].Reward != 5 {
		t.Errorf("episodes %v, want oldest first 3..5", eps)
	}
}

func TestConcat(t *testing.T) {
	f := false
	a := gaeBatch([]float64{1}, []float64{0}, []float64{0}, []bool{f}, []bool{f}, []bool{true})
	b := gaeBatch([]float64{2, 3}, []float64{0, 0}, []float64{0, 0}, []bool{f, f}, []bool{f, f}, []bool{f, true})
	b.Episodes = []Episode{{Reward: 5, Length: 2}}
	c, err := Concat(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 3 || len(c.VPreds) != 3 || len(c.Episodes) != 1 || c.Rewards[2] != 3 {
		t.Errorf("concat = %+v", c)
	}
	b.ObsDim = 2
	b.Obs = make([]float64, 4)
	if _, err := Concat(a, b); err == nil {
		t.Error("concat of different observation widths: want an error")
	}
}
