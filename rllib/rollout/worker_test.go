package rollout

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib/sample"
)

// counter is an environment whose observation is the step count. Action 1
// terminates the episode; otherwise it is truncated after limit steps.
type counter struct {
	t, limit int
}

func (c *counter) ObservationSpace() envs.Space   { return envs.NewBox(0, 100, 1) }
func (c *counter) ActionSpace() envs.Space        { return envs.Discrete{N: 2} }
func (c *counter) Reset(int64) ([]float64, error) { c.t = 0; return []float64{0}, nil }
func (c *counter) Close() error                   { return nil }
func (c *counter) Step(a []float64) (envs.Step, error) {
	c.t++
	return envs.Step{Obs: []float64{float64(c.t)}, Reward: 1, Terminated: a[0] == 1, Truncated: c.t >= c.limit}, nil
}

// scripted takes action 1 when the observation equals terminateAt and
// values an observation at ten times its count.
type scripted struct{ terminateAt float64 }

func (p scripted) DistDim() int { return 0 }
func (p scripted) Act(obs []float64, n int, _ *rand.Rand, out *Actions) error {
	out.Actions = out.Actions[:0]
	out.VPreds = out.VPreds[:0]
	for i := 0; i < n; i++ {
		a := 0.0
		if obs[i] == p.terminateAt {
			a = 1
		}
		out.Actions = append(out.Actions, a)
		out.VPreds = append(out.VPreds, 10*obs[i])
	}
	return nil
}
func (p scripted) Values(obs []float64, n int, vals []float64) error {
	for i := 0; i < n; i++ {
		vals[i] = 10 * obs[i]
	}
	return nil
}

type identity struct{}

func (identity) Size() int                                { return 1 }
func (identity) Process(dst, raw []float64, _ bool) error { copy(dst, raw); return nil }

func TestWorkerTruncationAndBoundaries(t *testing.T) {
	// Observation 1 triggers action 1, so both environments terminate at
	// their second step, before env 0's time limit of 3.
	vec, err := envs.NewVector(&counter{limit: 3}, &counter{limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	pol := scripted{terminateAt: 1}
	w, err := NewWithVector(Config{Env: "counter", FragmentLength: 4}, vec, pol, identity{})
	if err != nil {
		t.Fatal(err)
	}
	b := mustSample(t, w, 2)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 8 {
		t.Fatalf("batch has %d rows, want 2 envs × 4 steps", b.Len())
	}
	// Both envs see observations 0, 1 (terminate), 0, 1 (terminate): rows
	// 1 and 3 of each fragment are terminal, the boundary row 3 is terminal
	// so it needs no bootstrap.
	wantObs := []float64{0, 1, 0, 1, 0, 1, 0, 1}
	for r, o := range wantObs {
		if b.Obs[r] != o {
			t.Errorf("row %d observation %v, want %v", r, b.Obs[r], o)
		}
	}
	for _, r := range []int{1, 3, 5, 7} {
		if !b.Terminated[r] || b.Truncated[r] || b.Bootstrap[r] != 0 {
			t.Errorf("row %d: terminated %v truncated %v bootstrap %v, want a terminal row with no bootstrap", r, b.Terminated[r], b.Truncated[r], b.Bootstrap[r])
		}
	}
	if len(b.Episodes) != 4 || b.Episodes[0].Length != 2 {
		t.Errorf("episodes %v, want four of length 2", b.Episodes)
	}
}

func TestWorkerBootstrapsTruncatedAndCutFragments(t *testing.T) {
	w := newCounterWorker(t, Config{Env: "counter", FragmentLength: 3}, scripted{terminateAt: -1}, identity{}, 2)
	b := mustSample(t, w, 2)
	// Observations 0, 1 then truncation (final observation 2, value 20),
	// then 0 and a fragment cut whose next observation is 1 (value 10).
	if !b.Truncated[1] || b.Bootstrap[1] != 20 {
		t.Errorf("row 1: truncated %v bootstrap %v, want true and 20 (value of the final observation)", b.Truncated[1], b.Bootstrap[1])
	}
	if !b.Boundary[2] || b.Truncated[2] || b.Bootstrap[2] != 10 {
		t.Errorf("row 2: boundary %v truncated %v bootstrap %v, want a cut fragment bootstrapped with 10", b.Boundary[2], b.Truncated[2], b.Bootstrap[2])
	}
	if b.Bootstrap[0] != 0 {
		t.Errorf("row 0 bootstrap %v, want 0 inside a trajectory", b.Bootstrap[0])
	}
	// The unfinished episode continues into the next sample: observations
	// 1 (truncated), 0, 1 (truncated).
	b2 := mustSample(t, w, 2)
	if b2.Obs[0] != 1 || len(b2.Episodes) != 2 || b2.Episodes[0].Length != 2 {
		t.Errorf("second sample starts at %v with episodes %v, want 1 and two episodes of length 2", b2.Obs[0], b2.Episodes)
	}
}

func TestWorkerSimultaneousTruncations(t *testing.T) {
	// Every sub-environment hits its time limit at the same step, as
	// Pendulum's do.
	w := newCounterWorker(t, Config{Env: "counter", FragmentLength: 2}, scripted{terminateAt: -1}, identity{}, 2, 2, 2)
	b := mustSample(t, w, 2)
	for _, r := range []int{1, 3, 5} {
		if !b.Truncated[r] || b.Bootstrap[r] != 20 {
			t.Errorf("row %d: truncated %v bootstrap %v, want true and 20", r, b.Truncated[r], b.Bootstrap[r])
		}
	}
}

// stepCounter is a recurrent policy whose one-value state counts the steps
// of the current episode: it reports the state before the step as the
// value, and values a bootstrap observation at 100·state + obs so tests
// can see which state it was given.
type stepCounter struct{}

func (stepCounter) DistDim() int   { return 0 }
func (stepCounter) StateSize() int { return 1 }
func (stepCounter) Act(obs []float64, n int, rng *rand.Rand, out *Actions) error {
	return stepCounter{}.ActRecurrent(obs, make([]float64, n), n, rng, out)
}
func (stepCounter) Values(obs []float64, n int, vals []float64) error {
	return stepCounter{}.ValuesRecurrent(obs, make([]float64, n), n, vals)
}
func (stepCounter) ActRecurrent(obs, state []float64, n int, _ *rand.Rand, out *Actions) error {
	out.Actions = append(out.Actions[:0], make([]float64, n)...)
	out.VPreds = append(out.VPreds[:0], state[:n]...)
	out.State = out.State[:0]
	for _, s := range state[:n] {
		out.State = append(out.State, s+1)
	}
	return nil
}
func (stepCounter) ValuesRecurrent(obs, state []float64, n int, vals []float64) error {
	for i := range n {
		vals[i] = 100*state[i] + obs[i]
	}
	return nil
}

// TestWorkerCarriesRecurrentState checks that a recurrent policy's state
// runs on from step to step and across Sample calls, restarts from zero
// when an episode ends, that bootstrap values see the state of the step
// they follow, and that the batch is cut into sequences of at most
// max_seq_len steps that never cross an episode end, each with its
// initial state.
func TestWorkerCarriesRecurrentState(t *testing.T) {
	w := newCounterWorker(t, Config{Env: "counter", FragmentLength: 7, MaxSeqLen: 3}, stepCounter{}, identity{}, 5, 100)
	defer w.Close()
	b := mustSample(t, w, 1)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	// Environment 0 is truncated after its fifth step and starts again.
	wantV := []float64{0, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 4, 5, 6}
	if !slices.Equal(b.VPreds, wantV) {
		t.Fatalf("states before each step %v, want %v", b.VPreds, wantV)
	}
	if !slices.Equal(b.SeqLens, []int{3, 2, 2, 3, 3, 1}) {
		t.Fatalf("sequence lengths %v, want [3 2 2 3 3 1]", b.SeqLens)
	}
	if b.StateDim != 1 || !slices.Equal(b.StateIn, []float64{0, 3, 0, 0, 3, 6}) {
		t.Fatalf("initial states %v (width %d), want [0 3 0 0 3 6]", b.StateIn, b.StateDim)
	}
	// Truncation at row 4: final observation 5 after 5 steps; cuts at the
	// fragment ends: env 0 at observation 2 after 2 steps, env 1 at 7.
	for r, want := range map[int]float64{4: 505, 6: 202, 13: 707} {
		if b.Bootstrap[r] != want {
			t.Fatalf("bootstrap of row %d = %v, want %v (all %v)", r, b.Bootstrap[r], want, b.Bootstrap)
		}
	}
	b2 := mustSample(t, w, 2)
	if b2.VPreds[0] != 2 || b2.VPreds[7] != 7 || b2.StateIn[0] != 2 {
		t.Fatalf("second fragment starts from states %v and %v (StateIn %v), want 2 and 7", b2.VPreds[0], b2.VPreds[7], b2.StateIn)
	}
}

func TestWorkerRecurrentNeedsMaxSeqLen(t *testing.T) {
	vec, err := envs.NewVector(&counter{limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer vec.Close()
	if _, err := NewWithVector(Config{Env: "counter", FragmentLength: 7}, vec, stepCounter{}, identity{}); err == nil || !strings.Contains(err.Error(), "max_seq_len") {
		t.Fatalf("no max_seq_len: %v", err)
	}
}

// streamLog is a StreamProcessor that records, per call, the stream, the
// start flag and the raw observation.
type streamLog struct{ calls [][3]float64 }

func (s *streamLog) Size() int { return 1 }
func (s *streamLog) Process(dst, raw []float64, _ bool) error {
	panic("a StreamProcessor's Process must not be called by the worker")
}
func (s *streamLog) ProcessStream(stream int, start bool, dst, raw []float64, _ bool) error {
	st := 0.0
	if start {
		st = 1
	}
	s.calls = append(s.calls, [3]float64{float64(stream), st, raw[0]})
	copy(dst, raw)
	return nil
}

// A StreamProcessor hears each observation with its sub-environment and
// whether it starts an episode: the first after Reset and after every
// automatic reset, not the final observation of a truncated episode.
func TestWorkerStreamProcessor(t *testing.T) {
	vec, err := envs.NewVector(&counter{limit: 2}, &counter{limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	proc := &streamLog{}
	w, err := NewWithVector(Config{Env: "counter", FragmentLength: 2}, vec, scripted{terminateAt: -1}, proc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sample(context.Background(), rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	want := [][3]float64{
		{0, 1, 0}, {1, 1, 0}, // Reset
		{0, 0, 1}, {1, 0, 1}, // step 1
		{0, 0, 2}, {0, 1, 0}, {1, 0, 2}, // step 2: env 0 truncated (final 2), restarts at 0
	}
	if len(proc.calls) != len(want) {
		t.Fatalf("calls %v, want %v", proc.calls, want)
	}
	for i := range want {
		if proc.calls[i] != want[i] {
			t.Fatalf("call %d = %v (stream, start, obs), want %v; all %v", i, proc.calls[i], want[i], proc.calls)
		}
	}
}

// A recycled batch's observation buffer is refilled by the next Sample,
// which returns the same steps as without recycling; the old contents
// never leak into it.
func TestWorkerRecycleReusesObservations(t *testing.T) {
	newWorker := func() *Worker {
		w := newCounterWorker(t, Config{Env: "counter", FragmentLength: 4}, scripted{terminateAt: -1}, identity{}, 5, 7)
		return w
	}
	ctx := context.Background()
	recycled, fresh := newWorker(), newWorker()
	b1, err := recycled.Sample(ctx, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Sample(ctx, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	first := &b1.Obs[0]
	for i := range b1.Obs {
		b1.Obs[i] = -1 // stale values that must all be overwritten
	}
	recycled.Recycle(b1)
	got, err := recycled.Sample(ctx, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Sample(ctx, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if &got.Obs[0] != first {
		t.Error("the second sample allocated new observations instead of reusing the recycled ones")
	}
	if !slices.Equal(got.Obs, want.Obs) || !slices.Equal(got.Rewards, want.Rewards) || !slices.Equal(got.Bootstrap, want.Bootstrap) {
		t.Errorf("after recycling: obs %v rewards %v bootstrap %v; without: %v %v %v", got.Obs, got.Rewards, got.Bootstrap, want.Obs, want.Rewards, want.Bootstrap)
	}
}

// newCounterWorker is a worker with pol and proc on counters that end
// their episodes after the given limits.
func newCounterWorker(t *testing.T, cfg Config, pol Policy, proc ObsProcessor, limits ...int) *Worker {
	t.Helper()
	counters := make([]envs.Env, len(limits))
	for i, l := range limits {
		counters[i] = &counter{limit: l}
	}
	vec, err := envs.NewVector(counters...)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWithVector(cfg, vec, pol, proc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// mustSample is w's next batch, its actions drawn from the generator of
// seeds 1 and seed.
func mustSample(t *testing.T, w *Worker, seed uint64) sample.Batch {
	t.Helper()
	b, err := w.Sample(context.Background(), rand.New(rand.NewPCG(1, seed)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
