package node

import (
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

// TestPackDepth: a function's tasks are packed once timed a few times and
// short, as deep as the budget allows; long or untimed ones are spread.
func TestPackDepth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []time.Duration // run times the worker reports
		want  int
	}{
		{"untimed", nil, 0},
		{"too few samples", []time.Duration{time.Microsecond, time.Microsecond}, 0},
		{"no-op tasks: as deep as the budget allows", repeat(4*time.Microsecond, 8), int(packBudget / (4 * time.Microsecond))},
		{"just short enough", repeat(packShort, 8), int(packBudget / packShort)},
		{"long tasks run side by side", repeat(2*packShort, 8), 0},
		{"one preempted run does not unpack a short function", append(repeat(4*time.Microsecond, 8), 20*time.Millisecond), int(packBudget / (4*time.Microsecond + (sampleMax-4*time.Microsecond)/8))},
		{"a function that slows down stops being packed", append(repeat(4*time.Microsecond, 8), repeat(time.Millisecond, 16)...), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{}
			e := &task.Entry{Name: "f"}
			w := &proc{}
			for _, d := range tc.times {
				w.ran = int64(d)
				n.timeRun(w, &pending{entry: e})
			}
			if got := n.packDepth(e); got != tc.want {
				t.Fatalf("packDepth = %d, want %d (mean %v)", got, tc.want, n.runTimes[e])
			}
		})
	}
}

func repeat(d time.Duration, k int) []time.Duration {
	out := make([]time.Duration, k)
	for i := range out {
		out[i] = d
	}
	return out
}
