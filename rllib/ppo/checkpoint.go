package ppo

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// formatVersion is the checkpoint format: it changes when checkpointState's
// layout does.
const formatVersion = 1

// checkpointState is the training state: enough to continue exactly.
type checkpointState struct {
	Weights   []float64
	Adam      models.AdamState
	Filter    *models.RunningStat
	KLCoeff   float64
	Iteration int
	Timesteps int64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor (weights, Adam state, observation
// filter, KL coefficient, counters, recent episodes). Environment states
// are not saved: a restored agent starts new episodes. Sampling and
// shuffling randomness is derived from the seed and the iteration, so it
// needs no state.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(formatVersion, a.iteration, a.timesteps, checkpointState{
		Weights: a.pol.params.GetFlat(nil), Adam: a.learner.opt.State(), Filter: a.proc.stats(),
		KLCoeff: a.klCoeff, Iteration: a.iteration, Timesteps: a.timesteps, WindowState: a.window.State(),
	})
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged.
func (a *Agent) Restore(ctx context.Context, path string) error {
	var st checkpointState
	if err := a.LoadState(path, formatVersion, &st); err != nil {
		return err
	}
	if err := a.CheckWeights(path, len(st.Weights), a.pol.params.Len()); err != nil {
		return err
	}
	if (st.Filter == nil) != (a.proc.filter == nil) {
		return fmt.Errorf("PPO: Restore: %q was saved with a different observation_filter", path)
	}
	goodOpt := a.learner.opt.State()
	if err := a.learner.opt.SetState(st.Adam); err != nil {
		return fmt.Errorf("PPO: Restore: %w", err)
	}
	if err := a.proc.setStats(st.Filter); err != nil {
		_ = a.learner.opt.SetState(goodOpt)
		return fmt.Errorf("PPO: Restore: %w", err)
	}
	_ = a.pol.params.SetFlat(st.Weights)
	a.klCoeff, a.iteration, a.timesteps = st.KLCoeff, st.Iteration, st.Timesteps
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
