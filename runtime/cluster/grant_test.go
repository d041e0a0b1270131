package cluster

import (
	"fmt"
	"math/rand/v2"
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
			b := books{free: cpu(tc.free)}
			moves := rebalance(cpu(4), &b, ss)
			free := b.free
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

// The node owns its GPUs by index: leases granted GPUs get different
// ones, a return frees exactly the indices given back (and only those the
// lease holds), and no index is ever held twice or held and free.
func TestGrantBooksGPUs(t *testing.T) {
	gpus := func(n float64) task.Resources { return task.Resources{GPU: n, Custom: map[string]float64{}} }
	capacity := gpus(4)
	b := newBooks(capacity)
	ss := []*share{{desired: gpus(1)}, {desired: gpus(1)}}
	check := func(when string) {
		t.Helper()
		seen := map[int]string{}
		for _, i := range b.gpus {
			seen[i] = "free"
		}
		n := len(b.gpus)
		for j, s := range ss {
			if len(s.gpus) != int(s.held.GPU) {
				t.Fatalf("%s: lease %d holds %g GPUs with indices %v", when, j, s.held.GPU, s.gpus)
			}
			for _, i := range s.gpus {
				if w, dup := seen[i]; dup {
					t.Fatalf("%s: GPU %d held by lease %d and %s", when, i, j, w)
				}
				seen[i] = fmt.Sprint("lease ", j)
			}
			n += len(s.gpus)
		}
		if n != int(capacity.GPU) || float64(len(b.gpus)) != b.free.GPU {
			t.Fatalf("%s: %d GPU indices accounted for, %g free, the node has %g", when, n, b.free.GPU, capacity.GPU)
		}
	}
	rebalance(capacity, &b, ss)
	check("two leases granted one GPU each")
	if got := [][]int{ss[0].gpus, ss[1].gpus}; fmt.Sprint(got) != "[[0] [1]]" {
		t.Fatalf("two leases each granted one GPU got indices %v, want [[0] [1]]", got)
	}

	// The second gives its GPU back: that index, not another, is free.
	b.giveBack(ss[1], gpus(1), []int{1})
	check("lease 1 gave GPU 1 back")
	if fmt.Sprint(b.gpus) != "[1 2 3]" {
		t.Fatalf("free GPUs after lease 1 gave back GPU 1: %v, want [1 2 3]", b.gpus)
	}
	// The first grows to three: it gets free indices, never lease 0's.
	ss[0].desired = gpus(3)
	ss[1].desired = gpus(0)
	rebalance(capacity, &b, ss)
	check("lease 0 grew to three")
	if fmt.Sprint(ss[0].gpus) != "[0 1 2]" {
		t.Fatalf("lease 0 holds %v, want [0 1 2]", ss[0].gpus)
	}
	// A return naming an index the lease does not hold frees nothing of
	// another's: only GPU 2 (held) goes back, GPU 3 (free) is ignored.
	b.giveBack(ss[0], gpus(2), []int{2, 3})
	check("lease 0 gave back GPU 2 and named GPU 3, which it does not hold")
	if fmt.Sprint(ss[0].gpus, b.gpus) != "[0 1] [2 3]" {
		t.Fatalf("lease 0 holds %v, free %v; want [0 1] and [2 3]", ss[0].gpus, b.gpus)
	}
	// A newcomer wanting two while lease 0 holds two of four: free ones.
	ss = append(ss, &share{desired: gpus(2)})
	rebalance(capacity, &b, ss)
	check("a third lease joined")
	if fmt.Sprint(ss[2].gpus) != "[2 3]" {
		t.Fatalf("the newcomer holds %v, want [2 3]", ss[2].gpus)
	}
}

// Random grants, wants, reclaims and returns never hand a GPU index to two
// leases at once, nor lose one.
func TestGrantBooksRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	capacity := task.Resources{CPU: 4, GPU: 4, Custom: map[string]float64{}}
	b := newBooks(capacity)
	ss := []*share{{}, {}, {}}
	for step := range 2000 {
		s := ss[rng.IntN(len(ss))]
		switch rng.IntN(3) {
		case 0:
			s.desired = task.Resources{CPU: float64(rng.IntN(5)), GPU: float64(rng.IntN(5)), Custom: map[string]float64{}}
		case 1: // give back some held indices, naming some not held too
			var ids []int
			for _, i := range s.gpus {
				if rng.IntN(2) == 0 {
					ids = append(ids, i)
				}
			}
			ids = append(ids, rng.IntN(4))
			b.giveBack(s, task.Resources{CPU: float64(rng.IntN(2)), GPU: float64(len(ids)), Custom: map[string]float64{}}, ids)
		case 2: // the lease ends
			b.giveBack(s, s.held, s.gpus)
			*s = share{}
		}
		rebalance(capacity, &b, ss)
		seen := map[int]bool{}
		all := append([]int{}, b.gpus...)
		for _, s := range ss {
			if len(s.gpus) != int(s.held.GPU) {
				t.Fatalf("step %d: a lease holds %g GPUs with indices %v", step, s.held.GPU, s.gpus)
			}
			all = append(all, s.gpus...)
		}
		for _, i := range all {
			if seen[i] || i < 0 || i >= 4 {
				t.Fatalf("step %d: GPU indices %v (free %v): one held twice or out of range", step, all, b.gpus)
			}
			seen[i] = true
		}
		if len(all) != 4 || float64(len(b.gpus)) != b.free.GPU {
			t.Fatalf("step %d: GPU indices %v, %g free: lost one", step, all, b.free.GPU)
		}
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
