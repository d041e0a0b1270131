package envs

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustVector(t testing.TB, name string, n int) Vector {
	t.Helper()
	v, err := MakeVector(name, nil, n)
	if err != nil {
		t.Fatalf("MakeVector(%q, %d): %v", name, n, err)
	}
	return v
}

func seedRange(n int, base int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = base + int64(i)
	}
	return s
}

// plainEnv hides a built-in environment's fast path, so the tests cover the
// generic path that user environments take.
type plainEnv struct{ Env }

// stepper abstracts Step and StepInto so both are tested alike.
type stepper func(v Vector, actions [][]float64) (VectorStep, error)

var stepModes = map[string]stepper{
	"Step": func(v Vector, a [][]float64) (VectorStep, error) { return v.Step(a) },
	"StepInto": func(v Vector, a [][]float64) (VectorStep, error) {
		var out VectorStep
		err := v.(InPlaceStepper).StepInto(a, &out)
		return out, err
	},
}

func vectorKinds(t *testing.T, n int) map[string]Vector {
	plain := make([]Env, n)
	for i := range plain {
		plain[i] = plainEnv{mustMake(t, "CartPole-v1", nil)}
	}
	generic, err := NewVector(plain...)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Vector{"fast": mustVector(t, "CartPole-v1", n), "generic": generic}
}

// TestVectorMatchesSingleEnvs checks that every sub-environment of a Vector
// follows exactly the trajectory of a single environment given the same
// seeds, across automatic resets, and that FinalObs holds the last
// observation of each ended episode.
func TestVectorMatchesSingleEnvs(t *testing.T) {
	const n, steps = 3, 600
	for kind := range vectorKinds(t, n) {
		for mode, step := range stepModes {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				v := vectorKinds(t, n)[kind]
				defer v.Close()
				seeds := seedRange(n, 100)
				obs, err := v.Reset(seeds)
				if err != nil {
					t.Fatal(err)
				}
				singles := make([]Env, n)
				episodes := make([]int, n)
				for i := range singles {
					singles[i] = mustMake(t, "CartPole-v1", nil)
					o, _ := singles[i].Reset(seeds[i])
					near(t, "reset obs", obs[i], o, 0)
				}
				rng := rand.New(rand.NewPCG(5, 5))
				ended := 0
				for k := 0; k < steps; k++ {
					actions := make([][]float64, n)
					for i := range actions {
						actions[i] = []float64{float64(rng.IntN(2))}
					}
					vs, err := step(v, actions)
					if err != nil {
						t.Fatal(err)
					}
					for i, e := range singles {
						s := mustStep(t, e, actions[i]...)
						if vs.Rewards[i] != s.Reward || vs.Terminated[i] != s.Terminated || vs.Truncated[i] != s.Truncated {
							t.Fatalf("step %d env %d: vector (%v,%v,%v), single %+v", k, i,
								vs.Rewards[i], vs.Terminated[i], vs.Truncated[i], s)
						}
						if !s.Done() {
							near(t, "obs", vs.Obs[i], s.Obs, 0)
							if vs.FinalObs[i] != nil {
								t.Fatalf("step %d env %d: FinalObs set without an ended episode", k, i)
							}
							continue
						}
						ended++
						near(t, "FinalObs", vs.FinalObs[i], s.Obs, 0)
						episodes[i]++
						o, _ := e.Reset(AutoResetSeed(seeds[i], episodes[i]))
						near(t, "auto-reset obs", vs.Obs[i], o, 0)
					}
				}
				if ended < 20 {
					t.Fatalf("only %d episodes ended; the test needs auto-resets", ended)
				}
			})
		}
	}
}

func TestVectorReproducible(t *testing.T) {
	run := func() []float64 {
		v := mustVector(t, "CartPole-v1", 4)
		obs, _ := v.Reset(seedRange(4, 0))
		var out []float64
		for _, o := range obs {
			out = append(out, o...)
		}
		for k := 0; k < 300; k++ {
			a := make([][]float64, 4)
			for i := range a {
				a[i] = []float64{float64((k + i) % 2)}
			}
			vs, err := v.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range vs.Obs {
				out = append(out, o...)
			}
		}
		return out
	}
	near(t, "two runs", run(), run(), 0)
}

func TestAutoResetSeedsDistinct(t *testing.T) {
	// Sub-environments seeded 0..7 must not replay each other's episodes.
	seen := map[int64]string{}
	for i := int64(0); i < 8; i++ {
		for k := 0; k < 1000; k++ {
			s := i
			if k > 0 {
				s = AutoResetSeed(i, k)
			}
			if prev, dup := seen[s]; dup {
				t.Fatalf("seed %d used by sub-env %d episode %d and %s", s, i, k, prev)
			}
			seen[s] = "earlier"
		}
	}
}

func TestVectorStepResultsOwnedByCaller(t *testing.T) {
	v := mustVector(t, "CartPole-v1", 2)
	_, _ = v.Reset([]int64{1, 2})
	a, _ := v.Step([][]float64{{0}, {1}})
	keep := append([]float64(nil), a.Obs[0]...)
	a.Obs[0] = append(a.Obs[0], 99) // must not spill into row 1
	_, _ = v.Step([][]float64{{1}, {0}})
	near(t, "first step's obs after another step", a.Obs[0][:4], keep, 0)
	if len(a.Obs[1]) != 4 {
		t.Fatalf("row 1 changed length: %v", a.Obs[1])
	}
}

func TestStepIntoReusesBuffers(t *testing.T) {
	v := mustVector(t, "CartPole-v1", 8)
	_, _ = v.Reset(seedRange(8, 0))
	var out VectorStep
	acts := make([][]float64, 8)
	for i := range acts {
		acts[i] = []float64{1}
	}
	ip := v.(InPlaceStepper)
	if err := ip.StepInto(acts, &out); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := ip.StepInto(acts, &out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("StepInto allocated %v times per call, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(200, func() {
		if _, err := v.Step(acts); err != nil {
			t.Fatal(err)
		}
	})
	// Three blocks per step, plus a copy of the final observation for
	// episodes that end (rarely, with every action pushing right).
	if allocs > 4 {
		t.Fatalf("Step allocated %v times per call, want at most 4", allocs)
	}
}

func TestVectorBadInput(t *testing.T) {
	cases := []struct {
		name    string
		actions [][]float64
		want    string
	}{
		{"too few actions", [][]float64{{0}}, "got 1 actions"},
		{"action outside space", [][]float64{{0}, {2}}, "sub-environment 1"},
		{"NaN action", [][]float64{{math.NaN()}, {0}}, "NaN"},
	}
	for kind := range vectorKinds(t, 2) {
		for _, tc := range cases {
			for mode, step := range stepModes {
				t.Run(kind+"/"+mode+"/"+tc.name, func(t *testing.T) {
					v := vectorKinds(t, 2)[kind]
					obs, _ := v.Reset([]int64{1, 2})
					_, err := step(v, tc.actions)
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
					}
					// Nothing stepped: the next good step continues from the reset state.
					good, err := step(v, [][]float64{{1}, {1}})
					if err != nil {
						t.Fatal(err)
					}
					single := mustMake(t, "CartPole-v1", nil)
					o, _ := single.Reset(1)
					near(t, "reset obs", obs[0], o, 0)
					near(t, "after rejected batch", good.Obs[0], mustStep(t, single, 1).Obs, 0)
				})
			}
		}
	}
}

func TestVectorStepBeforeReset(t *testing.T) {
	v := mustVector(t, "CartPole-v1", 2)
	if _, err := v.Step([][]float64{{0}, {0}}); err == nil || !strings.Contains(err.Error(), "before Reset") {
		t.Fatalf("err = %v, want Step before Reset error", err)
	}
	if _, err := v.Reset([]int64{1}); err == nil || !strings.Contains(err.Error(), "got 1 seeds") {
		t.Fatalf("err = %v, want seed count error", err)
	}
}

type closeErrEnv struct{ Env }

func (closeErrEnv) Close() error { return errors.New("boom") }

func TestNewVectorChecks(t *testing.T) {
	if _, err := NewVector(); err == nil {
		t.Fatal("NewVector() succeeded")
	}
	if _, err := NewVector(mustMake(t, "CartPole-v1", nil), nil); err == nil {
		t.Fatal("NewVector with a nil env succeeded")
	}
	if _, err := NewVector(mustMake(t, "CartPole-v1", nil), mustMake(t, "Pendulum-v1", nil)); err == nil {
		t.Fatal("NewVector with mismatched observation spaces succeeded")
	}
	v, err := NewVector(mustMake(t, "CartPole-v1", nil), closeErrEnv{mustMake(t, "CartPole-v1", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err == nil || !strings.Contains(err.Error(), "sub-environment 1") {
		t.Fatalf("Close: %v, want the sub-environment's error", err)
	}
}

func TestVectorSpaces(t *testing.T) {
	v := mustVector(t, "Pendulum", 3)
	if v.NumEnvs() != 3 || v.ObservationSpace().Size() != 3 || v.ActionSpace().String() != "Box(-2, 2, [1])" {
		t.Fatalf("NumEnvs %d, obs %s, act %s", v.NumEnvs(), v.ObservationSpace(), v.ActionSpace())
	}
	if _, err := MakeVector("CartPole-v1", nil, 0); err == nil {
		t.Fatal("MakeVector with 0 envs succeeded")
	}
}

// nanEnv is a broken custom environment whose observations turn NaN.
type nanEnv struct {
	Env
	after int
	n     int
}

func (e *nanEnv) Step(a []float64) (Step, error) {
	s, err := e.Env.Step(a)
	if e.n++; e.n > e.after {
		s.Obs[2] = math.NaN()
	}
	return s, err
}

func TestVectorRejectsBadObservations(t *testing.T) {
	for mode, step := range stepModes {
		t.Run(mode, func(t *testing.T) {
			v, err := NewVector(mustMake(t, "CartPole-v1", nil), &nanEnv{Env: mustMake(t, "CartPole-v1", nil), after: 2})
			if err != nil {
				t.Fatal(err)
			}
			_, _ = v.Reset([]int64{0, 1})
			acts := [][]float64{{0}, {1}}
			for i := 0; i < 2; i++ {
				if _, err := step(v, acts); err != nil {
					t.Fatal(err)
				}
			}
			_, err = step(v, acts)
			if err == nil || !strings.Contains(err.Error(), "sub-environment 1") || !strings.Contains(err.Error(), "NaN") {
				t.Fatalf("err = %v, want one naming sub-environment 1 and the NaN observation", err)
			}
		})
	}
}
