package a3c

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
	Weights   []float64
	Adam      models.AdamState
	Iteration int
	Timesteps int64
	Updates   int64
	sample.WindowState
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding the header file and state.cbor (weights, Adam state, counters,
// recent episodes). Runners' environments are not saved: a restored
// agent's runners go on with their own episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	return a.SaveState(formatVersion, a.iteration, a.timesteps, checkpointState{
		Weights: a.pol.params.GetFlat(nil), Adam: a.opt.State(),
		Iteration: a.iteration, Timesteps: a.timesteps, Updates: a.updates, WindowState: a.window.State(),
	})
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged. Gradients in flight were computed from the old weights:
// they are dropped when they arrive.
func (a *Agent) Restore(ctx context.Context, path string) error {
	var st checkpointState
	if err := a.LoadState(path, formatVersion, &st); err != nil {
		return err
	}
	if err := a.CheckWeights(path, len(st.Weights), a.pol.params.Len()); err != nil {
		return err
	}
	good := a.opt.State()
	if err := a.opt.SetState(st.Adam); err != nil {
		return fmt.Errorf("A3C: Restore: %w", err)
	}
	old := a.pol.params.GetFlat(nil)
	_ = a.pol.params.SetFlat(st.Weights)
	if a.runners != nil {
		if err := a.putWeights(ctx); err != nil {
			_ = a.pol.params.SetFlat(old)
			_ = a.opt.SetState(good)
			return fmt.Errorf("A3C: Restore: %w", err)
		}
		for i := range a.stale {
			a.stale[i] = true
		}
	}
	a.iteration, a.timesteps, a.updates = st.Iteration, st.Timesteps, st.Updates
	a.window = sample.NewEpisodeWindowFrom(a.Cfg.MetricsSmoothingEpisodes, st.WindowState)
	return nil
}
