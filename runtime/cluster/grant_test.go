package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

func cpu(n float64) task.Resources { return task.Resources{CPU: n, Custom: map[string]float64{}} }

func TestDivide(t *testing.T) {
	tests := []struct {
		name     string
		capacity task.Resources
		desired  []task.Resources
		want     []task.Resources
	}{
		{"alone: all it wants", cpu(4), []task.Resources{cpu(3)}, []task.Resources{cpu(3)}},
		{"alone, wanting more than there is", cpu(4), []task.Resources{cpu(9)}, []task.Resources{cpu(4)}},
		{"two wanting all: even split", cpu(4), []task.Resources{cpu(9), cpu(9)}, []task.Resources{cpu(2), cpu(2)}},
		{"one wants little: it gets that, the other the rest", cpu(4), []task.Resources{cpu(1), cpu(9)}, []task.Resources{cpu(1), cpu(3)}},
		{"an idle lease gets nothing", cpu(4), []task.Resources{cpu(0), cpu(9)}, []task.Resources{cpu(0), cpu(4)}},
		{"odd unit to the oldest", cpu(3), []task.Resources{cpu(9), cpu(9)}, []task.Resources{cpu(2), cpu(1)}},
		{"fractions", cpu(2), []task.Resources{cpu(0.5), cpu(9)}, []task.Resources{cpu(0.5), cpu(1.5)}},
		{"GPUs whole", task.Resources{GPU: 3}, []task.Resources{{GPU: 2}, {GPU: 2}}, []task.Resources{{GPU: 2}, {GPU: 1}}},
		{"custom resources", task.Resources{Custom: map[string]float64{"tpu": 2}},
			[]task.Resources{{Custom: map[string]float64{"tpu": 5}}, {Custom: map[string]float64{"tpu": 5}}},
			[]task.Resources{{Custom: map[string]float64{"tpu": 1}}, {Custom: map[string]float64{"tpu": 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := make([]share, len(tc.desired))
			for i, d := range tc.desired {
				ss[i].desired = d
			}
			got := divide(tc.capacity, ss)
			for i := range got {
				if !(got[i]).Equal(tc.want[i]) {
					t.Errorf("lease %d gets %s, want %s (all %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

// rebalance grants from what is free up to each lease's fair share, and
// asks back what a lease holds above it only when another lacks its share.
func TestRebalance(t *testing.T) {
	tests := []struct {
		name          string
		free          float64 // of 4 CPUs
		held, desired []float64
		owed          []float64
		grant, recl   []float64
	}{
		{"a newcomer gets what is free", 2, []float64{2, 0}, []float64{2, 4}, nil, []float64{0, 2}, []float64{0, 0}},
		{"a greedy holder is asked for the newcomer's share", 0, []float64{4, 0}, []float64{4, 4}, nil, []float64{0, 0}, []float64{2, 0}},
		{"a holder is asked for just what the other lacks", 0, []float64{4, 0}, []float64{4, 1}, nil, []float64{0, 0}, []float64{1, 0}},
		{"nothing asked back twice", 0, []float64{4, 0}, []float64{4, 4}, []float64{2, 0}, []float64{0, 0}, []float64{0, 0}},
		{"no one lacking: a holder keeps more than it wants", 0, []float64{4, 0}, []float64{1, 0}, nil, []float64{0, 0}, []float64{0, 0}},
		{"both fed: nothing moves", 0, []float64{2, 2}, []float64{9, 9}, nil, []float64{0, 0}, []float64{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := make([]*share, len(tc.held))
			total := tc.free
			for i := range ss {
				ss[i] = &share{held: cpu(tc.held[i]), desired: cpu(tc.desired[i]), owed: cpu(0)}
				if tc.owed != nil {
					ss[i].owed = cpu(tc.owed[i])
				}
				total += tc.held[i]
			}
			free, moves := rebalance(cpu(4), cpu(tc.free), ss)
			granted := 0.0
			for i, m := range moves {
				if m.grant.CPU != tc.grant[i] || m.reclaim.CPU != tc.recl[i] {
					t.Errorf("lease %d: granted %g, asked back %g; want %g and %g", i, m.grant.CPU, m.reclaim.CPU, tc.grant[i], tc.recl[i])
				}
				granted += ss[i].held.CPU
			}
			// The node never grants what it does not have.
			if free.CPU < 0 || granted+free.CPU != total {
				t.Errorf("after: %g free, %g held, of %g", free.CPU, granted, total)
			}
		})
	}
}

// idleTracker gives back what stayed spare all along for the idle time,
// the least seen, and nothing while it was busy in between.
func TestIdleTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name  string
		spare []float64 // one sample every 100 ms
		give  []float64 // what observe returns at each
	}{
		{"idle for a second: gives back", []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
		{"the least seen", []float64{2, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"busy in between: starts over", []float64{2, 2, 2, 2, 2, 0, 2, 2, 2, 2, 2}, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var it idleTracker
			for i, s := range tc.spare {
				got := it.observe(ms(100*i), cpu(s), time.Second)
				if got.CPU != tc.give[i] {
					t.Fatalf("sample %d: gave back %s, want %g", i, fmt.Sprint(got), tc.give[i])
				}
			}
		})
	}
}
