package main

import (
	"bytes"
	"strings"
	"testing"
)

// An unknown flag is reported once (issue 25 saw it printed twice).
func TestUnknownFlagSaidOnce(t *testing.T) {
	for _, args := range [][]string{{"dashboard", "--bogus"}, {"timeline", "--bogus"}, {"--bogus"}} {
		cmd := newRoot()
		var out, errb bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err == nil {
			t.Fatalf("gray %v succeeded", args)
		}
		all := out.String() + errb.String()
		if n := strings.Count(all, "unknown flag: --bogus"); n != 1 {
			t.Errorf("gray %v says \"unknown flag\" %d times:\n%s", args, n, all)
		}
	}
}

// `gray list` without a kind (or with two) names the kinds it lists,
// not cobra's "accepts 1 arg(s), received 0".
func TestListNamesItsKinds(t *testing.T) {
	for _, args := range [][]string{{"list"}, {"list", "nodes", "jobs"}} {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "gray list nodes|jobs|actors|tasks") {
			t.Errorf("gray %v: %v, want the kinds named", args, err)
		}
	}
}
