package rllib

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/internal/suggest"
)

// Factory creates an agent from cfg, a config DefaultConfig returned with
// the user's keys decoded over it (Algorithm.Decode).
type Factory func(ctx context.Context, opts Options, cfg Config) (Agent, error)

// Algorithm describes a registered algorithm.
type Algorithm struct {
	// Name is what users type after --alg, e.g. "PPO".
	Name string
	// New creates an agent.
	New Factory
	// DefaultConfig returns a fresh copy of the defaults, the value
	// printed by `train --alg NAME --show-config`.
	DefaultConfig func() Config
}

// Define is the Algorithm of a Go algorithm whose config struct is C:
// defaults returns C's defaults and create makes an agent. Each
// algorithm's package registers itself with it in one line:
//
//	func init() { rllib.Register(rllib.Define("PPO", DefaultConfig, New)) }
func Define[C any, PC interface {
	*C
	Config
}, A Agent](name string, defaults func() C, create func(context.Context, Options, C) (A, error)) Algorithm {
	return Algorithm{
		Name: name,
		New: func(ctx context.Context, opts Options, cfg Config) (Agent, error) {
			c, ok := cfg.(PC)
			if !ok || c == nil {
				return nil, fmt.Errorf("%s: the config is a %T, want a %T (decode it with Algorithm.Decode)", name, cfg, PC(nil))
			}
			return create(ctx, opts, *c)
		},
		DefaultConfig: func() Config {
			c := defaults()
			return PC(&c)
		},
	}
}

// Decode returns a's defaults with the user's keys decoded over them
// (rllib.Decode names an unknown or wrong-typed key) and validated (the
// config names a key out of range): the one decoding of a config, which
// a.New then takes as it is.
func (a Algorithm) Decode(user map[string]any) (Config, error) {
	cfg, err := a.CheckKeys(user)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// CheckKeys is Decode without the range checks: a sweep checks the keys
// its trials share this way before the keys it searches over are known.
func (a Algorithm) CheckKeys(user map[string]any) (Config, error) {
	var cfg Config = MapConfig{}
	if a.DefaultConfig != nil {
		cfg = a.DefaultConfig()
	}
	if m, ok := cfg.(MapConfig); ok {
		// A plugin's keys go to the plugin, which checks them.
		m = maps.Clone(m)
		if m == nil {
			m = MapConfig{}
		}
		maps.Copy(m, user)
		return m, nil
	}
	if err := Decode(a.Name, user, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Make decodes the user's keys (Decode) and creates an agent with them.
func (a Algorithm) Make(ctx context.Context, opts Options, user map[string]any) (Agent, error) {
	cfg, err := a.Decode(user)
	if err != nil {
		return nil, err
	}
	return a.New(ctx, opts, cfg)
}

var algorithms = struct {
	sync.RWMutex
	byName    map[string]Algorithm
	resolvers map[string]func(name string) (Algorithm, error)
}{byName: map[string]Algorithm{}, resolvers: map[string]func(string) (Algorithm, error){}}

// Register adds an algorithm. Registering a name twice panics.
func Register(a Algorithm) {
	algorithms.Lock()
	defer algorithms.Unlock()
	if _, dup := algorithms.byName[a.Name]; dup {
		panic(fmt.Sprintf("rllib: algorithm %q registered twice", a.Name))
	}
	algorithms.byName[a.Name] = a
}

// RegisterResolver routes every algorithm name starting with prefix (such
// as "plugin:") to r.
func RegisterResolver(prefix string, r func(name string) (Algorithm, error)) {
	algorithms.Lock()
	defer algorithms.Unlock()
	algorithms.resolvers[prefix] = r
}

// Lookup finds an algorithm by name, case-insensitively.
func Lookup(name string) (Algorithm, error) {
	algorithms.RLock()
	for prefix, r := range algorithms.resolvers {
		if strings.HasPrefix(name, prefix) {
			algorithms.RUnlock()
			a, err := r(name)
			if err != nil {
				return a, err
			}
			return withNormalizedEnvConfig(a), nil
		}
	}
	defer algorithms.RUnlock()
	for n, a := range algorithms.byName {
		if strings.EqualFold(n, name) {
			return withNormalizedEnvConfig(a), nil
		}
	}
	names := algorithmNames()
	return Algorithm{}, fmt.Errorf("rllib: unknown algorithm %q%s; known algorithms: %s (or plugin:<path> for a plugin)",
		name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// AlgorithmNames lists the registered algorithms, sorted.
func AlgorithmNames() []string {
	algorithms.RLock()
	defer algorithms.RUnlock()
	return algorithmNames()
}

func algorithmNames() []string {
	names := make([]string, 0, len(algorithms.byName))
	for n := range algorithms.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// withNormalizedEnvConfig makes a's New normalize Options.EnvConfig
// (envs.NormalizeConfig) before the agent sees it, so that the config an
// agent hands its worker processes holds only types that cross processes
// unchanged: a json.Number, say, would reach a worker as a string.
func withNormalizedEnvConfig(a Algorithm) Algorithm {
	create := a.New
	if create == nil {
		return a
	}
	a.New = func(ctx context.Context, opts Options, cfg Config) (Agent, error) {
		ecfg, err := envs.NormalizeConfig(envs.Config(opts.EnvConfig))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		opts.EnvConfig = ecfg
		return create(ctx, opts, cfg)
	}
	return a
}
