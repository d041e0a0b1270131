package sched

import (
	"testing"
	"time"
)

// TestRunTimesDepth: a function's tasks are packed once timed a few times
// and short, as deep as the budget allows; long or untimed ones are spread.
func TestRunTimesDepth(t *testing.T) {
	type obs struct {
		d      time.Duration
		shell  bool // timed by the shell (Observed), not by the worker (Ran)
		queued bool
	}
	ran := func(d time.Duration, k int) []obs {
		out := make([]obs, k)
		for i := range out {
			out[i] = obs{d: d}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		times []obs
		want  int
	}{
		{"untimed", nil, 0},
		{"too few samples", ran(time.Microsecond, 2), 0},
		{"no-op tasks: as deep as the budget allows", ran(4*time.Microsecond, 8), int(PackBudget / (4 * time.Microsecond))},
		{"just short enough", ran(PackShort, 8), int(PackBudget / PackShort)},
		{"long tasks run side by side", ran(2*PackShort, 8), 0},
		{"a function that slows down stops being packed", append(ran(4*time.Microsecond, 8), ran(time.Millisecond, 16)...), 0},
		{"a send-timed task that took longer (a wake-up) does not raise the mean",
			append(ran(4*time.Microsecond, 4), obs{time.Millisecond, true, false}), int(PackBudget / (4 * time.Microsecond))},
		{"shell-timed: each lower time lowers the mean by an eighth of the gap", []obs{{PackShort, true, false}, {PackShort, true, false}, {PackShort / 2, true, false}, {PackShort / 2, true, false}}, 22}, // mean 50, 50, 46.9, 44.1 µs
		{"shell-timed behind a queued task raises the mean", append(ran(4*time.Microsecond, 4), obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}, obs{time.Millisecond, true, true}), 0},
		{"one preempted run does not unpack a short function", append(ran(4*time.Microsecond, 8), obs{d: 20 * time.Millisecond}), int(PackBudget / (4*time.Microsecond + (sampleMax-4*time.Microsecond)/8))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rt RunTimes[string]
			for _, o := range tc.times {
				if o.shell {
					rt.Observed("f", o.d, o.queued)
				} else {
					rt.Ran("f", o.d)
				}
			}
			if got := rt.Depth("f"); got != tc.want {
				t.Fatalf("Depth = %d, want %d (estimate %+v)", got, tc.want, rt.m["f"])
			}
			if got := rt.Depth("g"); got != 0 {
				t.Fatalf("Depth of an untimed function = %d, want 0", got)
			}
		})
	}
}
