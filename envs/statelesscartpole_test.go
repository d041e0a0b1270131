package envs

import (
	"math/rand/v2"
	"testing"
)

// TestStatelessCartPoleHidesVelocities steps StatelessCartPole-v1 and
// CartPole-v1 from the same seed with the same actions: the stateless
// observation is the full one's position and angle, and rewards,
// termination and truncation agree step for step.
func TestStatelessCartPoleHidesVelocities(t *testing.T) {
	sl := mustMake(t, "StatelessCartPole-v1", nil)
	full := mustMake(t, "CartPole-v1", nil)
	if got := sl.ObservationSpace().Size(); got != 2 {
		t.Fatalf("observation space %v has %d values, want 2", sl.ObservationSpace(), got)
	}
	if sl.ActionSpace().String() != full.ActionSpace().String() {
		t.Fatalf("action space %v, want CartPole's %v", sl.ActionSpace(), full.ActionSpace())
	}
	spec := sl.(Specer).Spec()
	if spec.Name != "StatelessCartPole-v1" || spec.MaxEpisodeSteps != 500 || spec.RewardThreshold != 475 {
		t.Fatalf("spec %+v, want StatelessCartPole-v1 with CartPole-v1's limit 500 and threshold 475", spec)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for ep := range 3 {
		o, err := sl.Reset(int64(ep))
		if err != nil {
			t.Fatal(err)
		}
		of, _ := full.Reset(int64(ep))
		near(t, "reset", o, []float64{of[0], of[2]}, 0)
		for step := 1; ; step++ {
			a := float64(rng.IntN(2))
			s, sf := mustStep(t, sl, a), mustStep(t, full, a)
			near(t, "step", s.Obs, []float64{sf.Obs[0], sf.Obs[2]}, 0)
			if s.Reward != sf.Reward || s.Terminated != sf.Terminated || s.Truncated != sf.Truncated {
				t.Fatalf("episode %d step %d: stateless %+v, full %+v", ep, step, s, sf)
			}
			if !sl.ObservationSpace().Contains(s.Obs) && !s.Terminated {
				t.Fatalf("episode %d step %d: observation %v outside %v", ep, step, s.Obs, sl.ObservationSpace())
			}
			if s.Terminated || s.Truncated {
				break
			}
		}
	}
}

// TestStatelessCartPoleVectorFastPath checks that a Vector of stateless
// cart-poles steps through the allocation-free path with two-value rows.
func TestStatelessCartPoleVectorFastPath(t *testing.T) {
	v, err := MakeVector("StatelessCartPole-v1", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	sv, ok := v.(*serialVector)
	if !ok || sv.flat == nil {
		t.Fatalf("vector %T does not use the fast path", v)
	}
	rows, err := v.Reset([]int64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if len(r) != 2 {
			t.Fatalf("row %d has %d values, want 2", i, len(r))
		}
	}
	s, err := v.Step([][]float64{{0}, {1}, {0}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range s.Obs {
		if len(r) != 2 || s.Rewards[i] != 1 {
			t.Fatalf("sub-environment %d: obs %v reward %v", i, r, s.Rewards[i])
		}
	}
}

func TestStatelessCartPoleRejectsBadConfig(t *testing.T) {
	if _, err := Make("StatelessCartPole-v1", Config{"max_episode_step": 10}); err == nil {
		t.Fatal("a misspelt config key was accepted")
	}
	e := mustMake(t, "StatelessCartPole-v1", Config{"max_episode_steps": 5})
	if got := e.(Specer).Spec().MaxEpisodeSteps; got != 5 {
		t.Fatalf("max_episode_steps override gave %d, want 5", got)
	}
}
