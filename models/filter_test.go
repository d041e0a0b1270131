package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFilterMergeEqualsFilterOnAllData(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	data := make([][]float64, 300)
	for i := range data {
		data[i] = []float64{3 + 2*rng.NormFloat64(), -1 + 0.1*rng.NormFloat64(), rng.Float64()}
	}
	all := NewMeanStdFilter(3, 0)
	for _, x := range data {
		_ = all.Apply(append([]float64(nil), x...), true)
	}
	// Three workers see a third each; the driver merges their deltas.
	master := NewMeanStdFilter(3, 0)
	workers := []*MeanStdFilter{NewMeanStdFilter(3, 0), NewMeanStdFilter(3, 0), NewMeanStdFilter(3, 0)}
	for i, x := range data {
		_ = workers[i%3].Apply(append([]float64(nil), x...), true)
	}
	for _, w := range workers {
		if err := master.Merge(w.TakeDelta()); err != nil {
			t.Fatal(err)
		}
	}
	want, got := all.Stats(), master.Stats()
	if got.N != want.N {
		t.Fatalf("count %d, want %d", got.N, want.N)
	}
	for i := range want.Mean {
		if !near(got.Mean[i], want.Mean[i], 1e-12) || !near(got.M2[i], want.M2[i], 1e-10) {
			t.Fatalf("dim %d: mean %v M2 %v, want %v %v", i, got.Mean[i], got.M2[i], want.Mean[i], want.M2[i])
		}
	}
	// Re-broadcast: every worker now normalises like the master.
	for _, w := range workers {
		if err := w.SetStats(master.Stats()); err != nil {
			t.Fatal(err)
		}
		if d := w.TakeDelta(); d.N != 0 {
			t.Fatalf("delta survived SetStats: %d", d.N)
		}
	}
	a, b := []float64{3, -1, 0.5}, []float64{3, -1, 0.5}
	_ = workers[1].Apply(a, false)
	_ = master.Apply(b, false)
	if a[0] != b[0] || a[1] != b[1] || a[2] != b[2] {
		t.Fatalf("worker %v, master %v", a, b)
	}
}

func TestFilterNormalisesAndClips(t *testing.T) {
	f := NewMeanStdFilter(1, 2)
	for _, v := range []float64{1, 3, 5, 7} { // mean 4, sample std √(20/3)
		_ = f.Apply([]float64{v}, true)
	}
	x := []float64{4 + math.Sqrt(20.0/3)}
	_ = f.Apply(x, false)
	if !near(x[0], 1, 1e-6) {
		t.Fatalf("one std above the mean gave %v", x[0])
	}
	x = []float64{100}
	_ = f.Apply(x, false)
	if x[0] != 2 {
		t.Fatalf("clip: got %v, want 2", x[0])
	}
	if err := f.Apply([]float64{1, 2}, true); err == nil {
		t.Fatal("wrong size accepted")
	}
	if err := f.Apply([]float64{math.Inf(1)}, true); err == nil {
		t.Fatal("Inf accepted into the statistics")
	}
	if err := f.SetStats(NewRunningStat(3)); err == nil {
		t.Fatal("statistics of another size accepted")
	}
}
