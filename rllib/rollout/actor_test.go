package rollout

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/envs"
)

// An Actor acts on the row Obs gives, clips to a Box, leaves a Discrete action alone, carries a
// recurrent policy's state from call to call and zeroes it on Reset.
func TestActor(t *testing.T) {
	cases := []struct {
		name   string
		pol    Policy
		space  envs.Space
		obs    float64
		want   []float64
		states []float64 // the state after each of three calls
	}{
		{"discrete", scripted{terminateAt: 3}, envs.Discrete{N: 2}, 3, []float64{1}, nil},
		{"clipped to the box", scripted{terminateAt: 3}, envs.NewBox(-0.5, 0.5, 1), 3, []float64{0.5}, nil},
		{"recurrent", stepCounter{}, envs.Discrete{N: 2}, 0, []float64{0}, []float64{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewActor(tc.space)
			for i := range 3 {
				row := a.Obs(1)
				row[0] = tc.obs
				got, err := a.Act(tc.pol, row, nil)
				if err != nil || !slices.Equal(got, tc.want) {
					t.Fatalf("call %d: %v, %v; want %v", i, got, err, tc.want)
				}
				if tc.states != nil && (len(a.State()) != 1 || a.State()[0] != tc.states[i]) {
					t.Fatalf("call %d: state %v, want [%v]", i, a.State(), tc.states[i])
				}
			}
			a.Reset()
			if slices.ContainsFunc(a.State(), func(s float64) bool { return s != 0 }) {
				t.Errorf("state after Reset: %v", a.State())
			}
		})
	}
}
