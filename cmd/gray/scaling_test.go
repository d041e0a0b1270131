package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	stdslices "slices"
	"testing"
	"time"
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
		{"4,2", 2, nil, true},
		{"2,2", 2, nil, true},
		{"2,,4", 2, nil, true},
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

func TestZombie(t *testing.T) {
	for _, c := range []struct {
		stat string
		want bool
	}{
		{"4490 (python3) Z 4488 20095 0 -1 4227148 233 0 0 0 11 1 0 0 20", true},
		{"4490 (a) Z) S 4488 20095 0 -1 4227148 233 0 0 0 11 1 0 0 20", false},
		{"4490 (gray) S 4488 20095 0 -1 4227148 233 0 0 0 11 1 0 0 20", false},
		{"garbage", false},
	} {
		if got := zombie(c.stat); got != c.want {
			t.Errorf("zombie(%q) = %v; want %v", c.stat, got, c.want)
		}
	}
}

func TestParseSwitches(t *testing.T) {
	for _, c := range []struct {
		status string
		want   int64
	}{
		{"Name:\tgray\nvoluntary_ctxt_switches:\t4711\nnonvoluntary_ctxt_switches:\t9\n", 4711},
		{"Name:\tgray\nnonvoluntary_ctxt_switches:\t9\n", 0},
		{"Name:\tgray\nvoluntary_ctxt_switches:\tx\n", 0},
	} {
		if got := parseSwitches(c.status); got != c.want {
			t.Errorf("parseSwitches(%q) = %d; want %d", c.status, got, c.want)
		}
	}
}

// A split counts a worker that ran between the readings, one started
// meanwhile whole, and one that exited by its reaped time less what it
// had used before: its parts add up to the difference of the totals.
func TestSplit(t *testing.T) {
	ms := time.Millisecond
	a := cpuReading{driver: 10 * ms, reaped: 0, workers: map[int]procReading{
		1: {cpu: 5 * ms, wakeups: 10}, // runs
		2: {cpu: 5 * ms, wakeups: 10}, // idle
		3: {cpu: 1 * ms, wakeups: 1},  // exits, reaped
	}}
	b := cpuReading{driver: 30 * ms, reaped: 2 * ms, workers: map[int]procReading{
		1: {cpu: 15 * ms, wakeups: 30},
		2: {cpu: 5 * ms, wakeups: 10},
		4: {cpu: 4 * ms, wakeups: 5}, // started meanwhile
	}}
	got := split(a, b, 1000)
	want := cpuSplit{Driver: 20e-6, Workers: 15e-6, Ran: 2, Of: 3, Wakeups: 0.025}
	near := func(x, y float64) bool { return x-y < 1e-12 && y-x < 1e-12 }
	if !near(got.Driver, want.Driver) || !near(got.Workers, want.Workers) || got.Ran != want.Ran || got.Of != want.Of || !near(got.Wakeups, want.Wakeups) {
		t.Errorf("split = %+v; want %+v", got, want)
	}
	if d := b.total() - a.total(); d != 35*ms {
		t.Errorf("total grew by %v; want 35ms (the split's sum)", d)
	}
}

// TestReadCPUWaitsForAnExitedWorker checks that a reading taken while a
// child has exited but is not reaped (its CPU time in neither /proc's
// listing nor the reaped time) is an error, not a reading that misses the
// child's time, and that once it is reaped the reading is taken.
func TestReadCPUWaitsForAnExitedWorker(t *testing.T) {
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Skipf("no true to start: %v", err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", c.Process.Pid)
	for {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		if zombie(string(b)) {
			break
		}
		runtime.Gosched()
	}
	if _, err := readCPUWithin(5 * time.Millisecond); err == nil {
		t.Fatal("a reading taken beside an unreaped child was no error")
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := readCPUWithin(5 * time.Millisecond); err != nil {
		t.Fatalf("after the child was reaped: %v", err)
	}
}
