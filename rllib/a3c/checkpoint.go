package a3c

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

// Checkpoint files inside checkpoint_<n>/, laid out as PPO's are.
const (
	metaFile  = "meta.json"
	stateFile = "state.cbor"
	// formatVersion changes when the state's layout does.
	formatVersion = 1
)

// checkpointMeta says what a checkpoint holds, in JSON for people and for
// the clear error when restoring into another algorithm or environment.
type checkpointMeta struct {
	Algorithm      string `json:"algorithm"`
	Env            string `json:"env"`
	Format         int    `json:"format"`
	Iteration      int    `json:"training_iteration"`
	TimestepsTotal int64  `json:"timesteps_total"`
	Config         Config `json:"config"`
}

// checkpointState is the training state.
type checkpointState struct {
	Weights       []float64
	Adam          models.AdamState
	Iteration     int
	Timesteps     int64
	Updates       int64
	Episodes      []sample.Episode
	EpisodesTotal int64
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding meta.json and state.cbor (weights, Adam state, counters, recent
// episodes). Runners' environments are not saved: a restored agent's
// runners go on with their own episodes.
func (a *Agent) Save(ctx context.Context) (string, error) {
	if a.opts.LogDir == "" {
		return "", errors.New("A3C: Save: the agent has no run folder (Options.LogDir is empty)")
	}
	dir := filepath.Join(a.opts.LogDir, fmt.Sprintf("checkpoint_%d", a.iteration))
	// Write into a temporary folder and rename, so a crash never leaves a
	// half-written checkpoint under the final name.
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	meta, err := json.MarshalIndent(checkpointMeta{
		Algorithm: "A3C", Env: a.opts.Env, Format: formatVersion,
		Iteration: a.iteration, TimestepsTotal: a.timesteps, Config: a.cfg,
	}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	state, err := codec.Marshal(checkpointState{
		Weights: a.pol.params.GetFlat(nil), Adam: a.opt.State(),
		Iteration: a.iteration, Timesteps: a.timesteps, Updates: a.updates,
		Episodes: a.window.Episodes(), EpisodesTotal: a.window.Total(),
	})
	if err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, metaFile), append(meta, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, stateFile), state, 0o644); err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("A3C: Save: %w", err)
	}
	return dir, nil
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network shape, is an error and leaves the
// agent unchanged. Gradients in flight were computed from the old weights:
// they are dropped when they arrive.
func (a *Agent) Restore(ctx context.Context, path string) error {
	raw, err := os.ReadFile(filepath.Join(path, metaFile))
	if err != nil {
		return fmt.Errorf("A3C: Restore: %q is not a checkpoint folder: %w", path, err)
	}
	var meta checkpointMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("A3C: Restore: %s: %w", filepath.Join(path, metaFile), err)
	}
	if meta.Algorithm != "A3C" {
		return fmt.Errorf("A3C: Restore: %q is a checkpoint of algorithm %q, not A3C", path, meta.Algorithm)
	}
	if meta.Env != a.opts.Env {
		return fmt.Errorf("A3C: Restore: %q is a checkpoint for environment %q, this agent runs %q", path, meta.Env, a.opts.Env)
	}
	if meta.Format != formatVersion {
		return fmt.Errorf("A3C: Restore: %q has checkpoint format %d, this version reads %d", path, meta.Format, formatVersion)
	}
	raw, err = os.ReadFile(filepath.Join(path, stateFile))
	if err != nil {
		return fmt.Errorf("A3C: Restore: %w", err)
	}
	var st checkpointState
	if err := codec.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("A3C: Restore: %s: %w", filepath.Join(path, stateFile), err)
	}
	if len(st.Weights) != a.pol.params.Len() {
		return fmt.Errorf("A3C: Restore: %q holds %d weights, this agent's model has %d (different model config?)", path, len(st.Weights), a.pol.params.Len())
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
	a.window = sample.NewEpisodeWindow(a.cfg.MetricsSmoothingEpisodes)
	a.window.Add(st.Episodes...)
	a.window.SetTotal(st.EpisodesTotal)
	return nil
}
