package driver

import (
	"strings"
	"testing"
	"time"
)

// GRAY_IDLE_RETURN sets how long a cluster driver keeps unused grants; a
// value that is not a positive duration is a clear error.
func TestIdleReturnFromTheEnvironment(t *testing.T) {
	tests := []struct {
		env     string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false}, // the default
		{"250ms", 250 * time.Millisecond, false},
		{"2s", 2 * time.Second, false},
		{"soon", 0, true},
		{"-1s", 0, true},
		{"0s", 0, true},
	}
	for _, tc := range tests {
		t.Setenv(EnvIdleReturn, tc.env)
		got, err := idleReturn()
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), EnvIdleReturn) {
				t.Errorf("%q: %v, want an error naming %s", tc.env, err, EnvIdleReturn)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.env, got, err, tc.want)
		}
	}
}
