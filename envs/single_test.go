package envs

import (
	"errors"
	"strings"
	"testing"
)

// countVector is a natively batched fake: each sub-environment counts its
// steps from its seed and ends an episode after three steps, resetting
// itself as a Vector must.
type countVector struct {
	n      int
	count  []float64
	seeds  []int64
	closed bool
}

func (c *countVector) NumEnvs() int            { return c.n }
func (c *countVector) ObservationSpace() Space { return NewBox(0, 100, 1) }
func (c *countVector) ActionSpace() Space      { return Discrete{N: 2} }
func (c *countVector) Close() error            { c.closed = true; return nil }

func (c *countVector) Reset(seeds []int64) ([][]float64, error) {
	c.seeds = append([]int64(nil), seeds...)
	c.count = make([]float64, c.n)
	obs := make([][]float64, c.n)
	for i, s := range seeds {
		c.count[i] = float64(s)
		obs[i] = []float64{c.count[i]}
	}
	return obs, nil
}

func (c *countVector) Step(actions [][]float64) (VectorStep, error) {
	if c.count == nil {
		return VectorStep{}, errors.New("count: Step before Reset")
	}
	out := VectorStep{
		Obs: make([][]float64, c.n), Rewards: make([]float64, c.n),
		Terminated: make([]bool, c.n), Truncated: make([]bool, c.n), FinalObs: make([][]float64, c.n),
	}
	for i := range actions {
		c.count[i]++
		out.Rewards[i] = actions[i][0]
		out.Obs[i] = []float64{c.count[i]}
		if c.count[i]-float64(c.seeds[i]) == 3 {
			out.Terminated[i] = true
			out.FinalObs[i] = out.Obs[i]
			c.count[i] = 50 // the next episode's first observation
			out.Obs[i] = []float64{c.count[i]}
		}
	}
	return out, nil
}

// TestMakeAdaptsVectorOnlyEnvironments checks that Make serves names that
// have only a VectorCreator, registered or resolved by prefix, as single
// environments that behave like the built-in ones.
func TestMakeAdaptsVectorOnlyEnvironments(t *testing.T) {
	var made []*countVector
	creator := func(cfg Config, n int) (Vector, error) {
		v := &countVector{n: n}
		made = append(made, v)
		return v, nil
	}
	RegisterVector("SingleTestCount-v0", creator)
	RegisterResolver("singletest:", func(name string) (VectorCreator, error) {
		if name == "singletest:missing" {
			return nil, errors.New("no such thing")
		}
		return creator, nil
	})

	for _, name := range []string{"SingleTestCount-v0", "SingleTestCount", "singletest:count"} {
		t.Run(name, func(t *testing.T) {
			env, err := Make(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			v := made[len(made)-1]
			if v.n != 1 {
				t.Errorf("Make asked for %d sub-environments, want 1", v.n)
			}
			if _, err := env.Step([]float64{1}); err == nil || !strings.Contains(err.Error(), "before Reset") {
				t.Errorf("Step before Reset: got %v, want an error asking for Reset", err)
			}
			obs, err := env.Reset(10)
			if err != nil || obs[0] != 10 {
				t.Fatalf("Reset(10) = %v, %v; want [10]", obs, err)
			}
			var st Step
			for k := 1; k <= 3; k++ {
				if st, err = env.Step([]float64{1}); err != nil {
					t.Fatal(err)
				}
				if st.Obs[0] != float64(10+k) || st.Reward != 1 {
					t.Errorf("step %d: %+v, want observation %d and reward 1", k, st, 10+k)
				}
			}
			if !st.Terminated {
				t.Errorf("third step %+v did not end the episode", st)
			}
			// The final observation, not the next episode's first.
			if st.Obs[0] != 13 {
				t.Errorf("last step observed %v, want the final observation 13", st.Obs)
			}
			if _, err := env.Step([]float64{0}); err == nil || !strings.Contains(err.Error(), "episode ended") {
				t.Errorf("Step after the end: got %v, want an error asking for Reset", err)
			}
			if obs, err = env.Reset(20); err != nil || obs[0] != 20 {
				t.Fatalf("Reset(20) = %v, %v; want [20]", obs, err)
			}
			if st, err = env.Step([]float64{0}); err != nil || st.Obs[0] != 21 || st.Done() {
				t.Errorf("step after a new Reset: %+v, %v; want observation 21, not done", st, err)
			}
			if err := env.Close(); err != nil || !v.closed {
				t.Errorf("Close: %v, vector closed %v; want the vector closed", err, v.closed)
			}
		})
	}

	if _, err := Make("singletest:missing", nil); err == nil || !strings.Contains(err.Error(), "no such thing") {
		t.Errorf("resolver error: got %v, want it passed on", err)
	}
	// MakeVector still gets the batched creator itself.
	v, err := MakeVector("singletest:count", nil, 4)
	if err != nil || v.NumEnvs() != 4 {
		t.Fatalf("MakeVector: %v, %v", v, err)
	}
	if _, ok := v.(*countVector); !ok {
		t.Errorf("MakeVector returned %T, want the VectorCreator's own vector", v)
	}
	if _, err := Make("NoSuchSingleTest-v0", nil); err == nil || !strings.Contains(err.Error(), "unknown environment") {
		t.Errorf("unknown name: got %v, want unknown environment", err)
	}
}

func TestSingleEnvRejectsWrongVectors(t *testing.T) {
	if _, err := SingleEnv(nil); err == nil {
		t.Error("SingleEnv(nil) succeeded")
	}
	if _, err := SingleEnv(&countVector{n: 2}); err == nil || !strings.Contains(err.Error(), "got 2") {
		t.Errorf("SingleEnv of 2 sub-environments: got %v, want an error naming the count", err)
	}
	env, err := SingleEnv(&countVector{n: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env.(Renderer); ok {
		t.Error("a vector that cannot render became a Renderer")
	}
}
