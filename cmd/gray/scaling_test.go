package main

import (
	stdslices "slices"
	"testing"
)

func TestScalingCPUs(t *testing.T) {
	for _, c := range []struct {
		list    string
		machine int
		want    []int
		bad     bool
	}{
		{"", 1, []int{1}, false},
		{"", 2, []int{1, 2}, false},
		{"", 16, []int{1, 2, 4, 8, 16}, false},
		{"", 12, []int{1, 2, 4, 8, 12}, false},
		{"2,16", 2, []int{2, 16}, false},
		{"2, x", 2, nil, true},
		{"0", 2, nil, true},
	} {
		got, err := scalingCPUs(c.list, c.machine)
		if (err != nil) != c.bad || !stdslices.Equal(got, c.want) {
			t.Errorf("scalingCPUs(%q, %d) = %v, %v; want %v (error: %v)", c.list, c.machine, got, err, c.want, c.bad)
		}
	}
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		line  string
		ppid  int
		ticks int64
		ok    bool
	}{
		{"11621 (cat) R 11612 11612 7349 0 -1 4194304 99 0 0 0 7 3 2 1 20 0 1 0", 11612, 13, true},
		// A command name with spaces and a parenthesis.
		{"5 (a b) c) S 1 5 5 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0", 1, 150, true},
		{"5 (short) S 1 5", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		ppid, ticks, ok := parseStat(c.line)
		if ppid != c.ppid || ticks != c.ticks || ok != c.ok {
			t.Errorf("parseStat(%q) = %d, %d, %v; want %d, %d, %v", c.line, ppid, ticks, ok, c.ppid, c.ticks, c.ok)
		}
	}
}

// A --scaling child's rows are found among its workers' output lines,
// before or after them; output without them is an error.
func TestChildRows(t *testing.T) {
	rows := `[
  {"name": "single client tasks async", "rate": 5, "unit": "calls/s", "spread": 0}
]
`
	for _, tc := range []struct {
		name, out string
		ok        bool
	}{
		{"rows alone", rows, true},
		{"worker lines before and after", "(worker 3) wire: a warning\n" + rows + "(worker 7) [late] line\n", true},
		{"no rows", "(worker 3) only a warning\n", false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := childRows([]byte(tc.out))
			if !tc.ok {
				if err == nil {
					t.Fatalf("rows %v from %q, want an error", got, tc.out)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0].Name != "single client tasks async" || got[0].Rate != 5 {
				t.Fatalf("rows %v, %v; want the one row", got, err)
			}
		})
	}
}
