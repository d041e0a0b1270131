package task

import "testing"

// String lists the non-zero amounts, custom ones too: a custom resource
// whose use fell back to zero leaves the line.
func TestResourcesString(t *testing.T) {
	for _, tc := range []struct {
		r    Resources
		want string
	}{
		{Resources{}, "nothing"},
		{Resources{Custom: map[string]float64{"A": 0}}, "nothing"},
		{Resources{CPU: 7, Custom: map[string]float64{"A": 2, "B": 0}}, "CPU=7 A=2"},
		{Resources{GPU: 1, Custom: map[string]float64{"b": 1, "a": 0.5}}, "GPU=1 a=0.5 b=1"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.r, got, tc.want)
		}
	}
}
