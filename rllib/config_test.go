package rllib

import (
	"errors"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
)

type seededConfig struct {
	Steps int    `json:"steps"`
	Seed  *int64 `json:"seed"`
}

func (c *seededConfig) Validate() error {
	if c.Steps < 1 {
		return errors.New("TEST config: steps must be at least 1")
	}
	return nil
}

func TestDecodeConfigAndRunSeed(t *testing.T) {
	cfg := seededConfig{Steps: 5}
	if err := DecodeConfig("TEST", Options{Config: map[string]any{"steps": 0}}, &cfg); err == nil || !strings.Contains(err.Error(), "steps must be at least 1") {
		t.Errorf("an out-of-range value: %v, want Validate's error", err)
	}
	cfg = seededConfig{Steps: 5}
	if err := DecodeConfig("TEST", Options{Config: map[string]any{"stpes": 3}}, &cfg); err == nil || !strings.Contains(err.Error(), `unknown key "stpes"`) {
		t.Errorf("an unknown key: %v, want Decode's error", err)
	}
	if err := DecodeConfig("TEST", Options{}, &cfg); err != nil || cfg.Steps != 5 {
		t.Errorf("no keys: %v, steps %d, want the defaults", err, cfg.Steps)
	}
	if got := RunSeed(3, cfg.Seed); got != 3 {
		t.Errorf("RunSeed without a seed key = %d, want the run's 3", got)
	}
	if err := DecodeConfig("TEST", Options{Config: map[string]any{"seed": 9}}, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := RunSeed(3, cfg.Seed); got != 9 {
		t.Errorf("RunSeed with seed 9 in the config = %d, want 9", got)
	}
}

func TestEnvSpaces(t *testing.T) {
	obs, act, err := EnvSpaces("TEST", Options{Env: "CartPole-v1"})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Size() != 4 {
		t.Errorf("CartPole observation space %v, want a Box of 4", obs)
	}
	if act != (envs.Discrete{N: 2}) {
		t.Errorf("CartPole action space %v, want Discrete(2)", act)
	}
	if _, _, err := EnvSpaces("TEST", Options{Env: "NoSuchEnv-v0"}); err == nil || !strings.HasPrefix(err.Error(), "TEST: ") {
		t.Errorf("an unknown environment: %v, want an error starting with the algorithm", err)
	}
}

// TestDecodeConfigTakesTheCallersDecoding checks that a config the caller
// decoded and validated already (Options.Decoded) is taken as it is: Config
// is not decoded again, and the agent gets a copy it may change freely.
func TestDecodeConfigTakesTheCallersDecoding(t *testing.T) {
	done := &seededConfig{Steps: 7}
	cfg := seededConfig{Steps: 5}
	// Config would fail to decode: it must not be read.
	opts := Options{Config: map[string]any{"stpes": 3}, Decoded: done}
	if err := DecodeConfig("TEST", opts, &cfg); err != nil {
		t.Fatalf("with a decoded config: %v", err)
	}
	if cfg.Steps != 7 {
		t.Fatalf("steps %d, want the decoded config's 7", cfg.Steps)
	}
	cfg.Steps = 1
	if done.Steps != 7 {
		t.Fatal("the agent's config aliases the caller's")
	}
	// A decoded config of another type is ignored: Config is decoded.
	type other struct{ seededConfig }
	opts.Decoded = &other{}
	if err := DecodeConfig("TEST", opts, &cfg); err == nil || !strings.Contains(err.Error(), `unknown key "stpes"`) {
		t.Fatalf("a decoded config of another type: %v, want Config decoded", err)
	}
}
