package task

import "testing"

// Leases and direct calls are on unless their variable is "0".
func TestFlagsOnUnlessZero(t *testing.T) {
	for _, tc := range []struct {
		val string
		on  bool
	}{
		{val: "", on: true},
		{val: "1", on: true},
		{val: "yes", on: true},
		{val: "0", on: false},
	} {
		for _, f := range []struct {
			env string
			on  func() bool
		}{{EnvLeases, LeasesOn}, {EnvDirect, DirectOn}} {
			t.Run(f.env+"="+tc.val, func(t *testing.T) {
				t.Setenv(f.env, tc.val)
				if got := f.on(); got != tc.on {
					t.Errorf("%s=%q: on = %v, want %v", f.env, tc.val, got, tc.on)
				}
			})
		}
	}
}
