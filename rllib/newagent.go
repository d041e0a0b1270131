package rllib

import (
	"fmt"
	"reflect"

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
// its defaults, from opts.Config (see Decode) and then validates it. When
// the caller decoded and validated the config already (opts.Decoded, of
// cfg's type), cfg takes a copy of that instead: one decoding per process.
func DecodeConfig(alg string, opts Options, cfg Validator) error {
	if d := opts.Decoded; d != nil {
		dv, cv := reflect.ValueOf(d), reflect.ValueOf(cfg)
		if dv.Type() == cv.Type() && dv.Kind() == reflect.Pointer && !dv.IsNil() {
			cv.Elem().Set(dv.Elem())
			return nil
		}
	}
	if err := Decode(alg, opts.Config, cfg); err != nil {
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
