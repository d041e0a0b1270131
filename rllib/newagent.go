package rllib

import (
	"fmt"

	"github.com/gray-ml/gray/envs"
)

// This file holds the first steps every algorithm's New takes: its config
// from the user's keys, its seed, and the environment's spaces.

// Validator is an algorithm config that checks its own values.
type Validator interface {
	// Validate returns an error naming the first key out of range.
	Validate() error
}

// DecodeConfig fills cfg, a pointer to an algorithm's config struct set to
// its defaults, from the user's keys (see Decode) and then validates it.
func DecodeConfig(alg string, user map[string]any, cfg Validator) error {
	if err := Decode(alg, user, cfg); err != nil {
		return err
	}
	return cfg.Validate()
}

// RunSeed is the seed an agent uses: the config's "seed" key when it is
// set, else the run's seed (Options.Seed).
func RunSeed(runSeed int64, configSeed *int64) int64 {
	if configSeed != nil {
		return *configSeed
	}
	return runSeed
}

// EnvSpaces builds opts.Env once, with opts.EnvConfig, to read its
// observation and action spaces, and closes it again: the driver needs the
// spaces to build its networks before any worker exists. Errors start with
// "<alg>: ".
func EnvSpaces(alg string, opts Options) (obs, act envs.Space, err error) {
	env, err := envs.Make(opts.Env, envs.Config(opts.EnvConfig))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", alg, err)
	}
	defer func() { _ = env.Close() }()
	return env.ObservationSpace(), env.ActionSpace(), nil
}
