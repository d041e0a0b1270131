package ppo

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// checkpointState is the training state, enough to continue exactly: the
// network, Adam and counters (rllib.TrainState), the observation filter,
// the KL coefficient and recent episodes.
type checkpointState struct {
	rllib.TrainState
	Filter  *models.RunningStat
	KLCoeff float64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor. Environment states are not
// saved: a restored agent starts new episodes. Sampling and shuffling
// randomness is derived from the seed and the iteration, so it needs no
// state.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(checkpointState{
		TrainState: rllib.NewTrainState(a.pol.Params, a.learner.opt, a.iteration, a.timesteps),
		Filter:     a.proc.stats(), KLCoeff: a.klCoeff, WindowState: a.window.State(),
	})
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged.
func (a *Agent) Restore(ctx context.Context, path string) error {
	var st checkpointState
	if err := a.LoadState(path, &st); err != nil {
		return err
	}
	if (st.Filter == nil) != (a.proc.filter == nil) {
		return fmt.Errorf("PPO: Restore: %q was saved with a different observation_filter", path)
	}
	setFilter := func() error { return a.proc.setStats(st.Filter) }
	if err := a.ApplyTrainState(path, st.TrainState, a.pol.Params, a.learner.opt, setFilter); err != nil {
		return err
	}
	a.klCoeff, a.iteration, a.timesteps = st.KLCoeff, st.Iteration, st.Timesteps
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
