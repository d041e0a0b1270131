package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/plugins/internal/wire"
	"github.com/gray-ml/gray/rllib"
)

// Prefix marks a name that points at a plugin executable: "plugin:<path>".
const Prefix = "plugin:"

// Importing the package routes "plugin:<path>" names of environments,
// algorithms, custom models (models.ModelOptions.CustomModel) and custom
// action distributions (models.ModelOptions.CustomActionDist) to plugin
// processes started with the default Options.
func init() {
	envs.RegisterResolver(Prefix, func(name string) (envs.VectorCreator, error) {
		path := strings.TrimPrefix(name, Prefix)
		if err := checkExecutable(path); err != nil {
			return nil, err
		}
		return EnvCreator(path, Options{}), nil
	})
	rllib.RegisterResolver(Prefix, func(name string) (rllib.Algorithm, error) {
		path := strings.TrimPrefix(name, Prefix)
		if err := checkExecutable(path); err != nil {
			return rllib.Algorithm{}, err
		}
		return AgentAlgorithm(name, path, Options{}), nil
	})
	models.RegisterModelResolver(Prefix, catalogResolver)
	models.RegisterDistResolver(Prefix, distResolver)
}

// catalogResolver builds a model plugin named in a model config's
// custom_model ("plugin:<path>"), with custom_options as its config.
func catalogResolver(name string, obsShape []int, numOutputs int, opts models.ModelOptions, seed uint64) (models.Model, error) {
	path := strings.TrimPrefix(name, Prefix)
	if err := checkExecutable(path); err != nil {
		return nil, err
	}
	in := 1
	for _, d := range obsShape {
		in *= d
	}
	return CatalogModel(path, opts.CustomOptions, in, numOutputs, opts.Value, seed)
}

// EnvCreator returns an envs.VectorCreator that starts the environment
// plugin at path, one process per Vector.
func EnvCreator(path string, opts Options) envs.VectorCreator {
	return func(cfg envs.Config, n int) (envs.Vector, error) {
		return NewVector(context.Background(), path, cfg, n, opts)
	}
}

// DefaultFolder is where plugins are looked up by name:
// ~/.gray/plugins/<kind>/<name>, kind being env or agent.
func DefaultFolder() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("plugins: finding the home folder: %w", err)
	}
	return filepath.Join(home, ".gray", "plugins"), nil
}

// RegisterDefaults registers the plugins of DefaultFolder and those named in
// ~/.gray/plugins.yaml, when they exist. The platform calls it once at start
// in every process (driver and workers), before resolving names.
func RegisterDefaults() error {
	dir, err := DefaultFolder()
	if err != nil {
		return err
	}
	if err := RegisterFolder(dir); err != nil {
		return err
	}
	cfg := filepath.Join(filepath.Dir(dir), "plugins.yaml")
	if _, err := os.Stat(cfg); err == nil {
		return RegisterConfig(cfg)
	}
	return nil
}

// RegisterFolder registers every executable dir/env/<name> as environment
// <name> (envs.RegisterVector) and every dir/agent/<name> as algorithm
// <name> (rllib.Register). A missing folder is not an error; a name that is
// already registered is.
func RegisterFolder(dir string) error {
	found := map[string]map[string]string{}
	for _, kind := range []string{wire.KindEnv, wire.KindAgent} {
		entries, err := os.ReadDir(filepath.Join(dir, kind))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("plugins: reading the plugins folder: %w", err)
		}
		found[kind] = map[string]string{}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			found[kind][e.Name()] = filepath.Join(dir, kind, e.Name())
		}
	}
	return register(found, dir)
}

// RegisterConfig registers the plugins named in a YAML file of the form
//
//	env:
//	  GridWorld-v0: /path/to/gridworld
//	agent:
//	  RandomSearch: ./bin/randomsearch
//
// Relative paths are relative to the file's folder.
func RegisterConfig(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("plugins: reading plugin config: %w", err)
	}
	var found map[string]map[string]string
	if err := yaml.Unmarshal(data, &found); err != nil {
		return fmt.Errorf("plugins: %s: want a map of kind (env, agent) to a map of name to executable: %w", path, err)
	}
	for kind, byName := range found {
		if kind != wire.KindEnv && kind != wire.KindAgent {
			return fmt.Errorf("plugins: %s: unknown plugin kind %q (known: env, agent)", path, kind)
		}
		for name, exe := range byName {
			if !filepath.IsAbs(exe) {
				byName[name] = filepath.Join(filepath.Dir(path), exe)
			}
		}
	}
	return register(found, path)
}

func register(found map[string]map[string]string, source string) error {
	envNames := envs.Names()
	algNames := rllib.AlgorithmNames()
	for _, kind := range []string{wire.KindEnv, wire.KindAgent} {
		names := make([]string, 0, len(found[kind]))
		for n := range found[kind] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			exe := found[kind][name]
			if err := checkExecutable(exe); err != nil {
				return fmt.Errorf("plugins: %s: %s %q: %w", source, kind, name, err)
			}
			switch kind {
			case wire.KindEnv:
				if slices.Contains(envNames, name) {
					return fmt.Errorf("plugins: %s: environment %q is already registered; rename the plugin", source, name)
				}
				// envs.Make adapts a one-sub-environment Vector for
				// algorithms that make single instances.
				envs.RegisterVector(name, EnvCreator(exe, Options{}))
			case wire.KindAgent:
				if slices.ContainsFunc(algNames, func(a string) bool { return strings.EqualFold(a, name) }) {
					return fmt.Errorf("plugins: %s: algorithm %q is already registered; rename the plugin", source, name)
				}
				rllib.Register(AgentAlgorithm(name, exe, Options{}))
			}
		}
	}
	return nil
}
