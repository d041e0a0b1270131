package suggest

import "testing"

func TestClosest(t *testing.T) {
	envs := []string{"Acrobot-v1", "CartPole-v0", "CartPole-v1", "Pendulum-v1"}
	for _, c := range []struct {
		word, cands string
		want        string
	}{
		{"CartPol-v1", "envs", "CartPole-v1"},
		{"cartpole-v1", "envs", "CartPole-v1"},
		{"Pendulm-v1", "envs", "Pendulum-v1"},
		{"Breakout-v4", "envs", ""},
		{"logunifrom", "spaces", "loguniform"},
		{"gridsearch", "spaces", "grid_search"},
		{"lr", "spaces", ""},
	} {
		cands := envs
		if c.cands == "spaces" {
			cands = []string{"grid_search", "choice", "uniform", "loguniform", "randint"}
		}
		if got := Closest(c.word, cands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := DidYouMean("CartPol-v1", envs); got != ` (did you mean "CartPole-v1"?)` {
		t.Errorf("DidYouMean = %q", got)
	}
}
