package main

import (
	"strings"
	"testing"
	"time"
)

// TestMicroFlagsRefuseWhatWouldBeIgnored checks that flags of one
// measurement given to another, and values that cannot be measured, get a
// one-line error naming the flag, instead of a full run of something else.
func TestMicroFlagsRefuseWhatWouldBeIgnored(t *testing.T) {
	ok := microFlags{trials: 3, duration: time.Second}
	for _, tc := range []struct {
		name    string
		edit    func(f *microFlags)
		changed string
		want    string
	}{
		{"defaults", func(f *microFlags) {}, "", ""},
		{"no trials", func(f *microFlags) { f.trials = 0 }, "", "--trials must be at least 1"},
		{"negative cpus", func(f *microFlags) { f.cpus = -3 }, "", "--cpus -3: give the session's CPUs, 0 or more"},
		{"negative queued", func(f *microFlags) { f.queued = -4 }, "", "--queued -4: give how many no-op tasks"},
		{"scaling with cpus", func(f *microFlags) { f.scaling, f.cpus = true, 4 }, "cpus", "drop --cpus (give --scaling-cpus 4 instead)"},
		{"scaling with queued", func(f *microFlags) { f.scaling, f.queued = true, 5 }, "", "give one of them"},
		{"scaling with filter", func(f *microFlags) { f.scaling, f.filter = true, "sync" }, "", "drop --filter"},
		{"scaling with address", func(f *microFlags) { f.scaling, f.address = true, "auto" }, "", "drop --address"},
		{"queued with filter", func(f *microFlags) { f.queued, f.filter = 5, "sync" }, "", "drop --filter"},
		{"a filter matching no row", func(f *microFlags) { f.filter = "nosuchrow" }, "", `--filter "nosuchrow" matches no row; the rows are: ` + rowTasksSync},
		{"a filter matching a row", func(f *microFlags) { f.filter = "nosuchrow,actor calls async" }, "", ""},
		{"queued alone", func(f *microFlags) { f.queued = 1000 }, "", ""},
		{"scaling alone", func(f *microFlags) { f.scaling = true }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			tc.edit(&f)
			f.changed = func(name string) bool { return name == tc.changed }
			err := checkMicroFlags(f)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}
}
