package es

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib"
)

// checkpointState is the training state: θ, Adam and counters
// (rllib.TrainState), the network's signature, the observation filter and
// the episode count. The noise table is not saved: it is a pure function
// of the seed and noise_size.
type checkpointState struct {
	rllib.TrainState
	Signature string
	Filter    *models.RunningStat
	Episodes  int64
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor.
func (a *Agent) Save(ctx context.Context) (string, error) {
	params := a.pol.Model.Params()
	st := checkpointState{
		TrainState: rllib.NewTrainState(params, a.opt, a.iteration, a.timesteps),
		Signature:  params.Signature(), Episodes: a.episodes,
	}
	if a.pol.Filter != nil {
		s := a.pol.Filter.Stats()
		st.Filter = &s
	}
	return a.SaveState(st)
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network, is an error and leaves the
// agent unchanged.
func (a *Agent) Restore(ctx context.Context, path string) error {
	var st checkpointState
	if err := a.LoadState(path, &st); err != nil {
		return err
	}
	params := a.pol.Model.Params()
	if len(st.Weights) != params.Len() || st.Signature != params.Signature() {
		return fmt.Errorf("ES: Restore: %q holds a network of %d weights (%s), this agent's has %d (%s): a different model config?",
			path, len(st.Weights), st.Signature, params.Len(), params.Signature())
	}
	if (st.Filter == nil) != (a.pol.Filter == nil) {
		return fmt.Errorf("ES: Restore: %q was saved with a different observation_filter", path)
	}
	setFilter := func() error {
		if st.Filter == nil {
			return nil
		}
		return a.pol.Filter.SetStats(*st.Filter)
	}
	if err := a.ApplyTrainState(path, st.TrainState, params, a.opt, setFilter); err != nil {
		return err
	}
	a.iteration, a.timesteps, a.episodes = st.Iteration, st.Timesteps, st.Episodes
	return nil
}
