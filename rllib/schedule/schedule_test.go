package schedule

import "testing"

func TestPiecewise(t *testing.T) {
	p, err := NewPiecewise([][2]float64{{0, 1}, {100, 0.5}, {200, 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    int64
		want float64
	}{{-5, 1}, {0, 1}, {50, 0.75}, {100, 0.5}, {150, 0.3}, {200, 0.1}, {1000, 0.1}} {
		if got := p.Value(tc.t); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("Value(%d) = %v, want %v", tc.t, got, tc.want)
		}
	}
	if got := Linear(1, 0, 10).Value(5); got != 0.5 {
		t.Errorf("Linear(1, 0, 10).Value(5) = %v, want 0.5", got)
	}
	for _, bad := range [][][2]float64{nil, {{0, 1}, {0, 2}}, {{10, 1}, {5, 2}}} {
		if _, err := NewPiecewise(bad); err == nil {
			t.Errorf("NewPiecewise(%v): want an error", bad)
		}
	}
}
