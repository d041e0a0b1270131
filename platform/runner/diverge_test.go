package runner

import (
	"math"
	"strings"
	"testing"
)

func TestDivergence(t *testing.T) {
	cfg := map[string]any{"lr": 0.5}
	for _, c := range []struct {
		learner map[string]float64
		want    string // "" for no error
	}{
		{map[string]float64{"vf_loss": 3e5, "entropy": 0.6, "grad_gnorm": 1e12}, ""},
		{map[string]float64{"vf_loss": 4e13}, "vf_loss=4e+13 (beyond ±1e+10): training diverged; lower the learning rate (lr is 0.5)"},
		{map[string]float64{"mean_q": -2e11}, "mean_q=-2e+11"},
		{map[string]float64{"kl": math.NaN()}, "kl=NaN: training diverged"},
	} {
		err := Divergence(c.learner, cfg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Divergence(%v) = %v, want %q", c.learner, err, c.want)
		}
	}
	if !entropyCollapsed(map[string]float64{"entropy": 0}) || entropyCollapsed(map[string]float64{"entropy": 0.1}) || entropyCollapsed(nil) {
		t.Error("entropyCollapsed")
	}
}
