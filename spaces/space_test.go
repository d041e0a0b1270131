package spaces

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSpaceContains(t *testing.T) {
	box := NewBoxBounds([]float64{-1, 0}, []float64{1, 5})
	inf := math.Inf(1)
	cases := []struct {
		name  string
		space Space
		x     []float64
		want  bool
	}{
		{"discrete low", Discrete{N: 3}, []float64{0}, true},
		{"discrete high", Discrete{N: 3}, []float64{2}, true},
		{"discrete past high", Discrete{N: 3}, []float64{3}, false},
		{"discrete negative", Discrete{N: 3}, []float64{-1}, false},
		{"discrete fraction", Discrete{N: 3}, []float64{1.5}, false},
		{"discrete NaN", Discrete{N: 3}, []float64{math.NaN()}, false},
		{"discrete Inf", Discrete{N: 3}, []float64{inf}, false},
		{"discrete empty", Discrete{N: 3}, nil, false},
		{"discrete two values", Discrete{N: 3}, []float64{0, 1}, false},
		{"box inside", box, []float64{0, 2}, true},
		{"box on bounds", box, []float64{-1, 5}, true},
		{"box below", box, []float64{-1.01, 2}, false},
		{"box above", box, []float64{0, 5.01}, false},
		{"box NaN", box, []float64{math.NaN(), 1}, false},
		{"box short", box, []float64{0}, false},
		{"box long", box, []float64{0, 1, 2}, false},
		{"unbounded box takes big values", NewBox(-inf, inf, 2), []float64{1e300, -1e300}, true},
		{"unbounded box rejects NaN", NewBox(-inf, inf, 2), []float64{0, math.NaN()}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.space.Contains(tc.x); got != tc.want {
				t.Fatalf("%s.Contains(%v) = %v, want %v", tc.space, tc.x, got, tc.want)
			}
		})
	}
}

func TestSpaceSizeShapeString(t *testing.T) {
	cases := []struct {
		space Space
		size  int
		shape []int
		str   string
	}{
		{Discrete{N: 2}, 1, []int{1}, "Discrete(2)"},
		{NewBox(-1, 1, 3), 3, []int{3}, "Box(-1, 1, [3])"},
		{NewBox(0, 1, 2, 3), 6, []int{2, 3}, "Box(0, 1, [2, 3])"},
		{NewBoxBounds([]float64{-1, -2}, []float64{1, 2}), 2, []int{2}, "Box(…, …, [2])"},
	}
	for _, tc := range cases {
		if tc.space.Size() != tc.size || !equalInts(tc.space.Shape(), tc.shape) || tc.space.String() != tc.str {
			t.Fatalf("%s: size %d shape %v string %q, want %d %v %q",
				tc.space, tc.space.Size(), tc.space.Shape(), tc.space.String(), tc.size, tc.shape, tc.str)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSpaceSample(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name  string
		space Space
	}{
		{"discrete", Discrete{N: 4}},
		{"bounded box", NewBoxBounds([]float64{-1, 10}, []float64{1, 20})},
		{"unbounded box", NewBox(-inf, inf, 3)},
		{"half-bounded below", NewBox(0, inf, 2)},
		{"half-bounded above", NewBox(-inf, 0, 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			seen := map[float64]bool{}
			for i := 0; i < 2000; i++ {
				x := tc.space.Sample(rng)
				if len(x) != tc.space.Size() || !tc.space.Contains(x) {
					t.Fatalf("sample %v not in %s", x, tc.space)
				}
				seen[x[0]] = true
			}
			if d, ok := tc.space.(Discrete); ok && len(seen) != d.N {
				t.Fatalf("2000 samples of %s hit %d values", d, len(seen))
			}
			if _, ok := tc.space.(Box); ok && len(seen) < 1900 {
				t.Fatalf("2000 box samples gave only %d distinct values", len(seen))
			}
		})
	}
	// Same generator state, same samples.
	a := NewBox(-1, 1, 4).Sample(rand.New(rand.NewPCG(3, 4)))
	b := NewBox(-1, 1, 4).Sample(rand.New(rand.NewPCG(3, 4)))
	if !slices.Equal(a, b) {
		t.Fatalf("seeded samples differ: %v and %v", a, b)
	}
}

func TestBoxSampleUniform(t *testing.T) {
	// The mean of U[10, 20) is 15 and its variance 100/12.
	rng := rand.New(rand.NewPCG(7, 7))
	b := NewBox(10, 20, 1)
	const n = 20000
	sum, sq := 0.0, 0.0
	for i := 0; i < n; i++ {
		x := b.Sample(rng)[0]
		sum += x
		sq += x * x
	}
	mean := sum / n
	variance := sq/n - mean*mean
	if math.Abs(mean-15) > 0.1 || math.Abs(variance-100.0/12) > 0.3 {
		t.Fatalf("mean %v variance %v, want 15 and %v", mean, variance, 100.0/12)
	}
}

func TestBoxClip(t *testing.T) {
	b := NewBox(-2, 2, 3)
	x := []float64{-3, 1, 2.5}
	b.Clip(x)
	if want := []float64{-2, 1, 2}; !slices.Equal(x, want) {
		t.Fatalf("clipped: %v, want %v", x, want)
	}
	nan := b.Clip([]float64{math.NaN(), 0, 0})
	if !math.IsNaN(nan[0]) {
		t.Fatalf("Clip replaced NaN: %v", nan)
	}
}
