package es

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gray-ml/gray/models"
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
	Algorithm      string `json:"algorithm"`
	Env            string `json:"env"`
	Format         int    `json:"format"`
	Iteration      int    `json:"training_iteration"`
	TimestepsTotal int64  `json:"timesteps_total"`
	Config         Config `json:"config"`
}

// checkpointState is the training state. The noise table is not saved: it
// is a pure function of the seed and noise_size.
type checkpointState struct {
	Weights   []float64
	Signature string
	Adam      models.AdamState
	Filter    *models.RunningStat
	Iteration int
	Timesteps int64
	Episodes  int64
}

// Save implements rllib.Agent: it writes LogDir/checkpoint_<iteration>/
// holding meta.json and state.cbor (θ, Adam state, observation filter,
// counters).
func (a *Agent) Save(ctx context.Context) (string, error) {
	if a.opts.LogDir == "" {
		return "", errors.New("ES: Save: the agent has no run folder (Options.LogDir is empty)")
	}
	dir := filepath.Join(a.opts.LogDir, fmt.Sprintf("checkpoint_%d", a.iteration))
	// Write into a temporary folder and rename, so a crash never leaves a
	// half-written checkpoint under the final name.
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	meta, err := json.MarshalIndent(checkpointMeta{
		Algorithm: "ES", Env: a.opts.Env, Format: formatVersion,
		Iteration: a.iteration, TimestepsTotal: a.timesteps, Config: a.cfg,
	}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	st := checkpointState{
		Weights: a.Weights(), Signature: a.pol.Model.Params().Signature(), Adam: a.opt.State(),
		Iteration: a.iteration, Timesteps: a.timesteps, Episodes: a.episodes,
	}
	if a.pol.Filter != nil {
		s := a.pol.Filter.Stats()
		st.Filter = &s
	}
	state, err := codec.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, metaFile), append(meta, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, stateFile), state, 0o644); err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("ES: Save: %w", err)
	}
	return dir, nil
}

// Restore implements rllib.Agent. A checkpoint of another algorithm or
// environment, or of a different network, is an error and leaves the
// agent unchanged.
func (a *Agent) Restore(ctx context.Context, path string) error {
	raw, err := os.ReadFile(filepath.Join(path, metaFile))
	if err != nil {
		return fmt.Errorf("ES: Restore: %q is not a checkpoint folder: %w", path, err)
	}
	var meta checkpointMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("ES: Restore: %s: %w", filepath.Join(path, metaFile), err)
	}
	switch {
	case meta.Algorithm != "ES":
		return fmt.Errorf("ES: Restore: %q is a checkpoint of algorithm %q, not ES", path, meta.Algorithm)
	case meta.Env != a.opts.Env:
		return fmt.Errorf("ES: Restore: %q is a checkpoint for environment %q, this agent runs %q", path, meta.Env, a.opts.Env)
	case meta.Format != formatVersion:
		return fmt.Errorf("ES: Restore: %q has checkpoint format %d, this version reads %d", path, meta.Format, formatVersion)
	}
	raw, err = os.ReadFile(filepath.Join(path, stateFile))
	if err != nil {
		return fmt.Errorf("ES: Restore: %w", err)
	}
	var st checkpointState
	if err := codec.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("ES: Restore: %s: %w", filepath.Join(path, stateFile), err)
	}
	params := a.pol.Model.Params()
	if len(st.Weights) != params.Len() || st.Signature != params.Signature() {
		return fmt.Errorf("ES: Restore: %q holds a network of %d weights (%s), this agent's has %d (%s): a different model config?",
			path, len(st.Weights), st.Signature, params.Len(), params.Signature())
	}
	if (st.Filter == nil) != (a.pol.Filter == nil) {
		return fmt.Errorf("ES: Restore: %q was saved with a different observation_filter", path)
	}
	goodOpt := a.opt.State()
	if err := a.opt.SetState(st.Adam); err != nil {
		return fmt.Errorf("ES: Restore: %w", err)
	}
	if st.Filter != nil {
		if err := a.pol.Filter.SetStats(*st.Filter); err != nil {
			_ = a.opt.SetState(goodOpt)
			return fmt.Errorf("ES: Restore: %w", err)
		}
	}
	_ = params.SetFlat(st.Weights)
	a.iteration, a.timesteps, a.episodes = st.Iteration, st.Timesteps, st.Episodes
	return nil
}
