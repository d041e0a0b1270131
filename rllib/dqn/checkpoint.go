package dqn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/sample"
	"github.com/gray-ml/gray/runtime/codec"
)

// Checkpoint files inside checkpoint_<n>/, laid out as PPO's.
const (
	metaFile  = "meta.json"
	stateFile = "state.cbor"
	// formatVersion changes when the state's layout does.
	formatVersion = 1
)

// checkpointMeta says what a checkpoint holds, in JSON for people and for
// the clear error when restoring into another algorithm or environment.
type checkpointMeta struct {
	Algorithm      string  `json:"algorithm"`
	Env            string  `json:"env"`
	Format         int     `json:"format"`
	Iteration      int     `json:"training_iteration"`
	TimestepsTotal int64   `json:"timesteps_total"`
	Epsilon        float64 `json:"epsilon"`
	Config         Config  `json:"config"`
}

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
	Episodes       []sample.Episode
	EpisodesTotal  int64
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding meta.json and state.cbor: online and target weights, Adam state,
// timesteps (which set ε and β), round and gradient-step counters, the
// target network's sync point and recent episodes. The replay buffer is
// not saved (at the default size it would be tens of megabytes per
// checkpoint): a restored agent refills it and learns again once it holds
// train_batch_size transitions (and learning_starts steps have been taken
// in all). Environment states are not saved either; a restored
// agent starts new episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	if a.opts.LogDir == "" {
		return "", errors.New("DQN: Save: the agent has no run folder (Options.LogDir is empty)")
	}
	dir := filepath.Join(a.opts.LogDir, fmt.Sprintf("checkpoint_%d", a.iteration))
	// Write into a temporary folder and rename, so a crash never leaves a
	// half-written checkpoint under the final name.
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	meta, err := json.MarshalIndent(checkpointMeta{
		Algorithm: "DQN", Env: a.opts.Env, Format: formatVersion, Iteration: a.iteration,
		TimestepsTotal: a.timesteps, Epsilon: a.Epsilon(), Config: a.cfg,
	}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	state, err := codec.Marshal(checkpointState{
		Weights: a.q.params.GetFlat(nil), TargetWeights: a.target.params.GetFlat(nil),
		Adam: a.learner.opt.State(), Iteration: a.iteration, Timesteps: a.timesteps,
		Rounds: a.rounds, GradSteps: a.gradSteps, LastTargetSync: a.lastTargetSync, TargetUpdates: a.targetUpdates,
		Episodes: a.window.Episodes(), EpisodesTotal: a.window.Total(),
	})
	if err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, metaFile), append(meta, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, stateFile), state, 0o644); err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("DQN: Save: %w", err)
	}
	return dir, nil
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged.
func (a *Agent) Restore(ctx context.Context, path string) error {
	raw, err := os.ReadFile(filepath.Join(path, metaFile))
	if err != nil {
		return fmt.Errorf("DQN: Restore: %q is not a checkpoint folder: %w", path, err)
	}
	var meta checkpointMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("DQN: Restore: %s: %w", filepath.Join(path, metaFile), err)
	}
	if meta.Algorithm != "DQN" {
		return fmt.Errorf("DQN: Restore: %q is a checkpoint of algorithm %q, not DQN", path, meta.Algorithm)
	}
	if meta.Env != a.opts.Env {
		return fmt.Errorf("DQN: Restore: %q is a checkpoint for environment %q, this agent runs %q", path, meta.Env, a.opts.Env)
	}
	if meta.Format != formatVersion {
		return fmt.Errorf("DQN: Restore: %q has checkpoint format %d, this version reads %d", path, meta.Format, formatVersion)
	}
	raw, err = os.ReadFile(filepath.Join(path, stateFile))
	if err != nil {
		return fmt.Errorf("DQN: Restore: %w", err)
	}
	var st checkpointState
	if err := codec.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("DQN: Restore: %s: %w", filepath.Join(path, stateFile), err)
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
	a.window = sample.NewEpisodeWindow(a.cfg.MetricsSmoothingEpisodes)
	a.window.Add(st.Episodes...)
	a.window.SetTotal(st.EpisodesTotal)
	return nil
}
