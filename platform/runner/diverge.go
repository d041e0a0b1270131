package runner

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// DivergenceLimit is the magnitude past which a learner's loss or value
// estimate means training has blown up rather than learned: returns of
// the environments Gray ships square to at most about 1e7, and a run with
// a learning rate far too high reports losses of 1e13 and more while
// staying finite.
const DivergenceLimit = 1e10

// entropyFloor is the entropy below which a stochastic policy has
// collapsed onto one action.
const entropyFloor = 1e-6

// divergence describes the learner statistics (keys with "loss" in their
// name, mean_q, mean_td_error) whose magnitude is beyond DivergenceLimit,
// or "" when there is none.
func divergence(learner map[string]float64) string {
	var bad []string
	for k, v := range learner {
		watched := strings.Contains(k, "loss") || k == "mean_q" || k == "mean_td_error"
		if watched && math.Abs(v) > DivergenceLimit {
			bad = append(bad, fmt.Sprintf("%s=%.3g", k, v))
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, ", ")
}

// entropyCollapsed reports whether learner reports an entropy so small
// that the policy always takes the same action.
func entropyCollapsed(learner map[string]float64) bool {
	e, ok := learner["entropy"]
	return ok && math.Abs(e) < entropyFloor
}

// Divergence returns an error when an iteration's learner statistics show
// that training blew up: a non-finite value, or a loss beyond
// DivergenceLimit. config is the run's full configuration, whose lr the
// message quotes.
func Divergence(learner map[string]float64, config map[string]any) error {
	if bad := nonFinite(learner); bad != "" {
		return fmt.Errorf("the learner reported %s: training diverged%s", bad, lrAdvice(config))
	}
	if bad := divergence(learner); bad != "" {
		return fmt.Errorf("the learner reported %s (beyond ±%.0e): training diverged%s", bad, DivergenceLimit, lrAdvice(config))
	}
	return nil
}

func lrAdvice(config map[string]any) string {
	if lr, ok := config["lr"]; ok {
		return fmt.Sprintf("; lower the learning rate (lr is %v) or clip gradients (grad_clip)", lr)
	}
	return "; lower the learning rate or clip gradients"
}

func nonFinite(m map[string]float64) string {
	var bad []string
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, ", ")
}
