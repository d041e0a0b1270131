package tasktime

import (
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/sched"
)

// Each case feeds one function's results in order and checks the last
// result stamp each returns and whether the function ends up packed.
func TestReturned(t *testing.T) {
	us := int64(time.Microsecond)
	long := int64(sched.PackShort) * 4
	type result struct{ ran, sent, last, now, wantLast int64 }
	for _, tc := range []struct {
		name    string
		results []result
		packed  bool
	}{
		{"worker-timed short tasks pack", []result{
			{3 * us, 0, 7, 0, 7}, {3 * us, 0, 7, 0, 7}, {3 * us, 0, 7, 0, 7}, {3 * us, 0, 7, 0, 7},
		}, true},
		{"worker-timed long tasks do not", []result{
			{long, 0, 0, 0, 0}, {long, 0, 0, 0, 0}, {long, 0, 0, 0, 0}, {long, 0, 0, 0, 0},
		}, false},
		{"too few samples do not", []result{
			{3 * us, 0, 0, 0, 0}, {3 * us, 0, 0, 0, 0}, {3 * us, 0, 0, 0, 0},
		}, false},
		{"node-timed back to back: each from the previous result", []result{
			// Sent together at 0; each result 5 µs after the one before.
			{-1, 0, 0, 5 * us, 5 * us}, {-1, 0, 5 * us, 10 * us, 10 * us},
			{-1, 0, 10 * us, 15 * us, 15 * us}, {-1, 0, 15 * us, 20 * us, 20 * us},
		}, true},
		{"node-timed from an idle worker: from the send, long", []result{
			{-1, 0, 0, long, long}, {-1, 2 * long, long, 3 * long, 3 * long},
			{-1, 4 * long, 3 * long, 5 * long, 5 * long}, {-1, 6 * long, 5 * long, 7 * long, 7 * long},
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := New[string](nil)
			for i, r := range tc.results {
				if got := tm.returned("f", r.ran, r.sent, r.last, r.now); got != r.wantLast {
					t.Errorf("result %d: last = %d, want %d", i, got, r.wantLast)
				}
			}
			if got := tm.Depth("f") > 0; got != tc.packed {
				t.Errorf("packed = %v, want %v (depth %d)", got, tc.packed, tm.Depth("f"))
			}
		})
	}
}

func TestNowAdvances(t *testing.T) {
	tm := New[string](nil)
	a := tm.Now()
	if b := tm.Returned("f", -1, a, 0); b < a {
		t.Errorf("a result's stamp %d precedes the send %d", b, a)
	}
}
