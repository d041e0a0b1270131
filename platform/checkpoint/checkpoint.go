// Package checkpoint records what a checkpoint holds (algorithm,
// environment, iteration, the config it was trained with) beside what the
// agent saved, so that restoring it into another algorithm or environment is
// a clear error rather than a confusing failure inside the agent, and so
// that `train rollout` can rebuild the agent from the checkpoint alone.
//
// Agents write their own state (Agent.Save); the platform writes a metadata
// file, MetaFile, next to it. rllib's algorithms write their header into
// that same file (rllib.CheckpointMetaFile), and the platform adds its keys
// to it: a checkpoint folder has one header. For a checkpoint folder P (the layout
// checkpoint_<n>/ that Dir names) the metadata is P/gray_checkpoint.json;
// for a checkpoint that is a single file P it is P.gray_checkpoint.json.
package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MetaFile is the metadata file's name inside a checkpoint folder.
const MetaFile = "gray_checkpoint.json"

// Version is the metadata format's version.
const Version = 1

// Meta describes one checkpoint.
type Meta struct {
	Version int `json:"version"`
	// Algorithm and Env are the names the agent was created with.
	Algorithm string `json:"algorithm"`
	Env       string `json:"env"`
	// Iteration is the number of training iterations completed.
	Iteration      int     `json:"iteration"`
	TimestepsTotal int64   `json:"timesteps_total"`
	TimeTotalS     float64 `json:"time_total_s"`
	Seed           int64   `json:"seed"`
	// Config is the algorithm's configuration (all keys), EnvConfig the
	// environment's.
	Config    map[string]any `json:"config,omitempty"`
	EnvConfig map[string]any `json:"env_config,omitempty"`
	// AgentPath is the path Agent.Save returned, relative to the folder of
	// the metadata file: the path to hand to Agent.Restore.
	AgentPath string `json:"agent_path"`
	Created   string `json:"created"`
	// Files holds the SHA-256 (hex) of every file of the agent's
	// checkpoint, by slash-separated path relative to AgentPath ("." when
	// the checkpoint is one file). Read verifies them, so that a damaged
	// checkpoint is an error rather than silently wrong weights.
	// Checkpoints written before checksums existed have none.
	Files map[string]string `json:"files,omitempty"`
}

// Dir is the conventional folder of the checkpoint taken after iteration n
// in a run folder: <runDir>/checkpoint_<n>.
func Dir(runDir string, n int) string {
	return filepath.Join(runDir, fmt.Sprintf("checkpoint_%d", n))
}

// metaPath is where the metadata of the checkpoint at agentPath goes.
func metaPath(agentPath string) (string, error) {
	st, err := os.Stat(agentPath)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if st.IsDir() {
		return filepath.Join(agentPath, MetaFile), nil
	}
	return agentPath + "." + MetaFile, nil
}

// Write records m for the checkpoint the agent saved at agentPath, beside
// it (see the package comment), and returns the metadata file's path.
func Write(agentPath string, m Meta) (string, error) {
	path, err := metaPath(agentPath)
	if err != nil {
		return "", err
	}
	return writeMeta(path, agentPath, m)
}

// WriteIn records m for the checkpoint the agent saved at agentPath in
// dir/MetaFile, so that dir (a folder holding agentPath, such as a sweep
// trial's checkpoint folder) is itself a checkpoint that Read accepts. The
// path to the agent's checkpoint is stored relative to dir: the folder can
// be moved or copied.
func WriteIn(dir, agentPath string, m Meta) (string, error) {
	return writeMeta(filepath.Join(dir, MetaFile), agentPath, m)
}

func writeMeta(path, agentPath string, m Meta) (string, error) {
	rel, err := filepath.Rel(filepath.Dir(path), agentPath)
	if err != nil {
		rel = agentPath
	}
	m.Version = Version
	m.AgentPath = rel
	if m.Created == "" {
		m.Created = time.Now().Format(time.RFC3339)
	}
	if m.Files, err = checksums(agentPath); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	b, err := mergeHeader(path, m)
	if err != nil {
		return "", err
	}
	// Written to a temporary file and renamed: a checkpoint either has its
	// whole metadata or none, so a half-written one is never restored.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("checkpoint: writing metadata: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("checkpoint: writing metadata: %w", err)
	}
	return path, nil
}

// mergeHeader encodes m over the keys the agent already wrote into the
// header file at path, if any (rllib.SaveCheckpoint writes its header,
// algorithm, format and config, into the same file): a checkpoint has one
// header, the agent's keys and the platform's.
func mergeHeader(path string, m Meta) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encoding metadata: %w", err)
	}
	var ours map[string]json.RawMessage
	if err := json.Unmarshal(b, &ours); err != nil {
		return nil, fmt.Errorf("checkpoint: encoding metadata: %w", err)
	}
	merged := map[string]json.RawMessage{}
	if old, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(old, &merged); err != nil {
			return nil, fmt.Errorf("checkpoint: the agent's header %s is not a JSON object: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	for k, v := range ours {
		merged[k] = v
	}
	out, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encoding metadata: %w", err)
	}
	return out, nil
}

// Read loads the metadata of the checkpoint at path: a checkpoint folder, a
// checkpoint file, or the metadata file itself. It returns the metadata and
// the path to pass to Agent.Restore.
func Read(path string) (Meta, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Meta{}, "", fmt.Errorf("checkpoint %s does not exist", path)
		}
		return Meta{}, "", fmt.Errorf("checkpoint: %w", err)
	}
	var mp string
	switch {
	case st.IsDir():
		mp = filepath.Join(path, MetaFile)
	case strings.HasSuffix(path, MetaFile):
		mp = path
	default:
		mp = path + "." + MetaFile
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Meta{}, "", fmt.Errorf("%s is not a Gray checkpoint: it has no %s (pass a checkpoint_<n> folder of a run, or the path Save returned)", path, MetaFile)
		}
		return Meta{}, "", fmt.Errorf("checkpoint: %w", err)
	}
	var m Meta
	// Numbers stay as written (json.Number), so that an integer config key
	// reaches the agent as an integer.
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return Meta{}, "", fmt.Errorf("checkpoint metadata %s is damaged: %w", mp, err)
	}
	if m.Version > Version {
		return Meta{}, "", fmt.Errorf("checkpoint %s has metadata version %d; this build reads up to %d: use a newer train", path, m.Version, Version)
	}
	if m.AgentPath == "" && filepath.Base(mp) == MetaFile {
		// An agent's own header (rllib.SaveCheckpoint), without the
		// platform's keys: the checkpoint is the folder holding it.
		m.AgentPath = "."
	}
	if m.Algorithm == "" || m.AgentPath == "" {
		return Meta{}, "", fmt.Errorf("checkpoint metadata %s lacks the algorithm or the agent's path", mp)
	}
	agent := m.AgentPath
	if !filepath.IsAbs(agent) {
		agent = filepath.Join(filepath.Dir(mp), agent)
	}
	if err := verify(agent, m.Files); err != nil {
		return Meta{}, "", fmt.Errorf("checkpoint %s is damaged: %w; restore another checkpoint (or retrain)", path, err)
	}
	return m, agent, nil
}

// Check reports a clear error when the checkpoint was made by another
// algorithm or for another environment than alg and env. Algorithm and
// environment names compare case-insensitively (as the registries look
// them up); a bare environment family (CartPole) matches any of its
// versions.
func (m Meta) Check(alg, env string) error {
	if alg != "" && !strings.EqualFold(alg, m.Algorithm) {
		return fmt.Errorf("checkpoint was written by algorithm %s, not %s: restore it with --alg %s, or start %s from scratch without --restore",
			m.Algorithm, alg, m.Algorithm, alg)
	}
	if env != "" && !sameEnv(env, m.Env) {
		return fmt.Errorf("checkpoint was trained on environment %s, not %s: restore it with --env %s, or train on %s from scratch without --restore",
			m.Env, env, m.Env, env)
	}
	return nil
}

func sameEnv(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return true
	}
	fa, _, va := strings.Cut(a, "-v")
	fb, _, vb := strings.Cut(b, "-v")
	return (!va || !vb) && fa == fb
}
