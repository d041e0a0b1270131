package dqn

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// checkpointState is the training state: the online network, Adam and
// counters (rllib.TrainState; timesteps set ε and β), the target network,
// round and gradient-step counters, the target's sync point and recent
// episodes.
type checkpointState struct {
	rllib.TrainState
	TargetWeights  []float64
	Rounds         int64
	GradSteps      int64
	LastTargetSync int64
	TargetUpdates  int64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor. The replay buffer is not saved
// (at the default size it would be tens of megabytes per checkpoint): a
// restored agent refills it and learns again once it holds
// train_batch_size transitions (and learning_starts steps have been taken
// in all). Environment states are not saved either; a restored agent
// starts new episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(checkpointState{
		TrainState:    rllib.NewTrainState(a.q.params, a.learner.opt, a.iteration, a.timesteps),
		TargetWeights: a.target.params.GetFlat(nil),
		Rounds:        a.rounds, GradSteps: a.gradSteps, LastTargetSync: a.lastTargetSync, TargetUpdates: a.targetUpdates,
		WindowState: a.window.State(),
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
	if n := a.target.params.Len(); len(st.TargetWeights) != n {
		return fmt.Errorf("DQN: Restore: %q holds %d target weights, this agent's Q network has %d (different model or dueling config?)", path, len(st.TargetWeights), n)
	}
	setTarget := func() error { return a.target.params.SetFlat(st.TargetWeights) }
	if err := a.ApplyTrainState(path, st.TrainState, a.q.params, a.learner.opt, setTarget); err != nil {
		return err
	}
	a.iteration, a.timesteps, a.rounds, a.gradSteps = st.Iteration, st.Timesteps, st.Rounds, st.GradSteps
	a.lastTargetSync, a.targetUpdates = st.LastTargetSync, st.TargetUpdates
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
