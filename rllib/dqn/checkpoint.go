package dqn

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
)

// formatVersion is the checkpoint format: it changes when checkpointState's
// layout does.
const formatVersion = 1

// checkpointState is the training state.
type checkpointState struct {
	Weights        []float64
	TargetWeights  []float64
	Adam           models.AdamState
	Iteration      int
	Timesteps      int64
	Rounds         int64
	GradSteps      int64
	LastTargetSync int64
	TargetUpdates  int64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor: online and target weights, Adam
// state, timesteps (which set ε and β), round and gradient-step counters,
// the target network's sync point and recent episodes. The replay buffer
// is not saved (at the default size it would be tens of megabytes per
// checkpoint): a restored agent refills it and learns again once it holds
// train_batch_size transitions (and learning_starts steps have been taken
// in all). Environment states are not saved either; a restored agent
// starts new episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(formatVersion, a.iteration, a.timesteps, checkpointState{
		Weights: a.q.params.GetFlat(nil), TargetWeights: a.target.params.GetFlat(nil),
		Adam: a.learner.opt.State(), Iteration: a.iteration, Timesteps: a.timesteps,
		Rounds: a.rounds, GradSteps: a.gradSteps, LastTargetSync: a.lastTargetSync, TargetUpdates: a.targetUpdates,
		WindowState: a.window.State(),
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
	n := a.q.params.Len()
	if len(st.Weights) != n || len(st.TargetWeights) != n {
		return fmt.Errorf("DQN: Restore: %q holds %d weights, this agent's Q network has %d (different model or dueling config?)", path, len(st.Weights), n)
	}
	if err := a.learner.opt.SetState(st.Adam); err != nil {
		return fmt.Errorf("DQN: Restore: %w", err)
	}
	_ = a.q.params.SetFlat(st.Weights)
	_ = a.target.params.SetFlat(st.TargetWeights)
	a.iteration, a.timesteps, a.rounds, a.gradSteps = st.Iteration, st.Timesteps, st.Rounds, st.GradSteps
	a.lastTargetSync, a.targetUpdates = st.LastTargetSync, st.TargetUpdates
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
