// Package tunelog gives Tune's trials the platform's run-folder layout:
// a tune.LoggerFactory whose loggers write params.json, config.json,
// result.json, progress.csv and a TensorBoard event file into each trial's
// folder (see platform/runlog).
package tunelog

import (
	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/tune"
)

// Options tune the loggers Factory makes.
type Options struct {
	// Sync fsyncs result.json after every result. Results survive a
	// killed process either way (each is written before Log returns); only
	// an operating-system crash can lose unsynced ones, and the fsync costs
	// about a millisecond per result, more than Tune's overhead budget.
	Sync bool
	// NoTensorBoard skips the event file.
	NoTensorBoard bool
}

// Factory returns a tune.LoggerFactory writing the platform's layout. It
// is called each time a trial (re)starts and appends to what the trial
// wrote before; the runner first drops, through TruncateAfter, what the
// trial logged after the checkpoint it is restored from.
func Factory(opts Options) tune.LoggerFactory {
	return func(trialDir string, params map[string]any) (tune.Logger, error) {
		r, err := runlog.Open(trialDir, runlog.Options{
			Config: params, Params: params, NoSync: !opts.Sync, NoTensorBoard: opts.NoTensorBoard,
		})
		if err != nil {
			return nil, err
		}
		return logger{r}, nil
	}
}

type logger struct{ run *runlog.Run }

// Log writes one result. An agent's result as Tune encodes it (the
// rllib.Result's JSON, learner statistics under "learner", further results
// under "extra") is laid out as `train` lays it out: learner statistics
// under info/learner, extra results at the top level.
func (l logger) Log(result map[string]any) error {
	_, err := l.run.Log(Layout(result))
	return err
}

// TruncateAfter implements tune.Truncater: results after iteration k,
// which the restored trial re-computes, are dropped from result.json and
// progress.csv.
func (l logger) TruncateAfter(k int) error { return l.run.TruncateAfter(k) }

func (l logger) Close() error { return l.run.Close() }

// Layout lays an agent's result as Tune encodes it (rllib.Result's JSON:
// learner statistics under "learner", further results under "extra") out
// as `train` does: learner statistics under info/learner, extra results at
// the top level (under extra only where they would hide another key).
// Other results are returned as they are.
func Layout(result map[string]any) map[string]any {
	learner, hasLearner := result["learner"].(map[string]any)
	extra, hasExtra := result["extra"].(map[string]any)
	if !hasLearner && !hasExtra {
		return result
	}
	out := make(map[string]any, len(result)+len(extra))
	for k, v := range result {
		out[k] = v
	}
	if hasLearner {
		delete(out, "learner")
		info, _ := out["info"].(map[string]any)
		merged := map[string]any{"learner": learner}
		for k, v := range info {
			if k != "learner" {
				merged[k] = v
			}
		}
		out["info"] = merged
	}
	if hasExtra {
		delete(out, "extra")
		var clashing map[string]any
		for k, v := range extra {
			if _, taken := out[k]; taken {
				if clashing == nil {
					clashing = map[string]any{}
				}
				clashing[k] = v
				continue
			}
			out[k] = v
		}
		if clashing != nil {
			out["extra"] = clashing
		}
	}
	return out
}
