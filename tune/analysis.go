package tune

import "fmt"

// BestTrial returns the trial of the experiment in dir whose last result
// has the best value of metric, with its config and checkpoints.
func BestTrial(dir, metric string, mode Mode) (*TrialSummary, error) {
	if mode == "" {
		mode = Max
	}
	if !mode.valid() {
		return nil, fmt.Errorf("tune: mode must be %q or %q, got %q", Max, Min, mode)
	}
	trials, err := LoadTrials(dir)
	if err != nil {
		return nil, err
	}
	var best *TrialSummary
	var bestScore float64
	for _, t := range trials {
		v, ok := ResultFloat(t.LastResult, metric)
		if !ok {
			continue
		}
		if s := mode.score(v); best == nil || s > bestScore {
			best, bestScore = t, s
		}
	}
	if best == nil {
		return nil, fmt.Errorf("tune: no trial of %s reported %q", dir, metric)
	}
	return best, nil
}
