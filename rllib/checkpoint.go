package rllib

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fxamacker/cbor/v2"
)

// Files of a checkpoint folder, LogDir/checkpoint_<iteration>/.
const (
	// CheckpointMetaFile is the JSON header: what the checkpoint holds, for
	// people and for the clear error when restoring into another algorithm
	// or environment. It is the file the platform adds its own keys to
	// (platform/checkpoint.MetaFile): a checkpoint has one header.
	CheckpointMetaFile = "gray_checkpoint.json"
	// legacyCheckpointMetaFile is the header's name in checkpoints written
	// before it was shared with the platform; LoadCheckpoint still reads it.
	legacyCheckpointMetaFile = "meta.json"
	// CheckpointStateFile is the algorithm's training state, in CBOR.
	CheckpointStateFile = "state.cbor"
)

// CheckpointHeader is the part of the header file every algorithm writes and
// Restore checks. An algorithm's meta struct embeds it (untagged, so its
// keys stay at the top level of the JSON) and adds its own keys, such as
// its config.
type CheckpointHeader struct {
	Algorithm string `json:"algorithm"`
	Env       string `json:"env"`
	// Format is the algorithm's state layout version: it changes when the
	// state struct does.
	Format         int   `json:"format"`
	Iteration      int   `json:"training_iteration"`
	TimestepsTotal int64 `json:"timesteps_total"`
}

// Header returns h; through embedding it makes every meta struct a
// CheckpointMeta.
func (h CheckpointHeader) Header() CheckpointHeader { return h }

// CheckpointMeta is what SaveCheckpoint writes into the header file: a struct
// embedding CheckpointHeader.
type CheckpointMeta interface {
	Header() CheckpointHeader
}

// stateDecoder reads state.cbor: weights are long arrays, beyond the CBOR
// library's default limit of 131,072 elements.
var stateDecoder = func() cbor.DecMode {
	m, err := cbor.DecOptions{MaxNestedLevels: 64, MaxArrayElements: 1<<31 - 1, MaxMapPairs: 1 << 24}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// SaveCheckpoint writes logDir/checkpoint_<iteration>/ holding meta as
// CheckpointMetaFile and state (in CBOR, a file format of its own, not the
// runtime's wire format) as state.cbor, and
// returns the folder's path. It writes into a temporary folder and renames
// it, so a crash never leaves a half-written checkpoint under the final
// name; an earlier checkpoint of the same iteration is replaced. Errors
// start with "<algorithm>: Save:".
func SaveCheckpoint(logDir string, meta CheckpointMeta, state any) (string, error) {
	h := meta.Header()
	if logDir == "" {
		return "", fmt.Errorf("%s: Save: the agent has no run folder (Options.LogDir is empty)", h.Algorithm)
	}
	dir := filepath.Join(logDir, fmt.Sprintf("checkpoint_%d", h.Iteration))
	if err := writeCheckpoint(dir, meta, state); err != nil {
		return "", fmt.Errorf("%s: Save: %w", h.Algorithm, err)
	}
	return dir, nil
}

func writeCheckpoint(dir string, meta, state any) error {
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	stateCBOR, err := cbor.Marshal(state)
	if err != nil {
		return err
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, CheckpointMetaFile), append(metaJSON, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, CheckpointStateFile), stateCBOR, 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

// LoadCheckpoint reads the checkpoint folder path written by SaveCheckpoint
// into state, a pointer to the algorithm's state struct. It first checks
// the header file against want's Algorithm, Env and Format (the other fields are
// not compared) and returns an error naming both sides when they differ,
// before it touches state. Errors start with "<algorithm>: Restore:"; the
// caller checks the state's shapes against its agent and applies it.
func LoadCheckpoint(path string, want CheckpointHeader, state any) error {
	alg := want.Algorithm
	raw, err := os.ReadFile(filepath.Join(path, CheckpointMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		raw, err = os.ReadFile(filepath.Join(path, legacyCheckpointMetaFile))
	}
	if err != nil {
		return fmt.Errorf("%s: Restore: %q is not a checkpoint folder: %w", alg, path, err)
	}
	var got CheckpointHeader
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("%s: Restore: %s: %w", alg, filepath.Join(path, CheckpointMetaFile), err)
	}
	switch {
	case got.Algorithm != want.Algorithm:
		return fmt.Errorf("%s: Restore: %q is a checkpoint of algorithm %q, not %s", alg, path, got.Algorithm, alg)
	case got.Env != want.Env:
		return fmt.Errorf("%s: Restore: %q is a checkpoint for environment %q, this agent runs %q", alg, path, got.Env, want.Env)
	case got.Format != want.Format:
		return fmt.Errorf("%s: Restore: %q has checkpoint format %d, this version reads %d", alg, path, got.Format, want.Format)
	}
	raw, err = os.ReadFile(filepath.Join(path, CheckpointStateFile))
	if err != nil {
		return fmt.Errorf("%s: Restore: %w", alg, err)
	}
	if err := stateDecoder.Unmarshal(raw, state); err != nil {
		return fmt.Errorf("%s: Restore: %s: %w", alg, filepath.Join(path, CheckpointStateFile), err)
	}
	return nil
}
