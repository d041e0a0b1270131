package a3c

import (
	"context"

	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// checkpointState is the training state: the network, Adam and counters
// (rllib.TrainState), the number of gradients applied, recent episodes.
type checkpointState struct {
	rllib.TrainState
	Updates int64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor. Runners' environments are not
// saved: a restored agent's runners go on with their own episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(checkpointState{
		TrainState: rllib.NewTrainState(a.pol.Params, a.opt, a.iteration, a.timesteps),
		Updates:    a.updates, WindowState: a.window.State(),
	})
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged. Gradients in flight were computed from the old weights:
// they are dropped when they arrive.
func (a *Agent) Restore(ctx context.Context, path string) error {
	var st checkpointState
	if err := a.LoadState(path, &st); err != nil {
		return err
	}
	putWeights := func() error {
		if a.runners == nil {
			return nil
		}
		return a.putWeights(ctx)
	}
	if err := a.ApplyTrainState(path, st.TrainState, a.pol.Params, a.opt, putWeights); err != nil {
		return err
	}
	for i := range a.stale {
		a.stale[i] = true
	}
	a.iteration, a.timesteps, a.updates = st.Iteration, st.Timesteps, st.Updates
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
