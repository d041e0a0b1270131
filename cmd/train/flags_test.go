package main

import (
	"strings"
	"testing"
)

// An unknown flag is reported once (issue 25 saw it printed twice).
func TestUnknownFlagSaidOnce(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--env", "CartPole-v1", "--dashboard", "--bogus"}, {"rollout", "--bogus"}} {
		o := train(t, args...)
		if o.code == 0 {
			t.Fatalf("train %v succeeded", args)
		}
		if n := strings.Count(o.stdout+o.stderr, "unknown flag: --bogus"); n != 1 {
			t.Errorf("train %v says \"unknown flag\" %d times:\nstdout: %s\nstderr: %s", args, n, o.stdout, o.stderr)
		}
	}
}
