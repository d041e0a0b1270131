// Package rllib holds what every reinforcement-learning algorithm shares: the
// agent contract and registry, results, configuration decoding, and (in
// sub-packages beside the algorithms) rollouts, sample batches, replay
// buffers, optimizers and parameter servers.
package rllib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/internal/suggest"
)

// Agent is a trainable policy: one algorithm bound to one environment.
type Agent interface {
	// Train runs one training iteration and reports its result.
	Train(ctx context.Context) (Result, error)
	// Save writes a checkpoint into the agent's run folder and returns its path.
	Save(ctx context.Context) (string, error)
	// Restore loads a checkpoint written by Save of the same algorithm and
	// environment.
	Restore(ctx context.Context, path string) error
	// ComputeAction returns the policy's action for one observation.
	ComputeAction(obs []float64) ([]float64, error)
	// Iteration is the number of training iterations completed.
	Iteration() int
	// LogDir is the agent's run folder.
	LogDir() string
	// Stop releases the agent's workers and resources.
	Stop() error
}

// EpisodeStarter is implemented by agents whose ComputeAction depends on
// the earlier observations of an episode: a recurrent policy
// (model.use_lstm) carries its state from call to call, and a model config
// that stacks or differences frames keeps a history. Code stepping an
// environment with ComputeAction calls StartEpisode before each episode's
// first observation.
type EpisodeStarter interface {
	StartEpisode()
}

// Options are the settings every agent receives besides its own config.
type Options struct {
	// Env names the environment (a registered name or a plugin reference).
	Env string
	// EnvConfig is passed to the environment's creator.
	EnvConfig map[string]any
	// Config is the algorithm's configuration as given by the user (decoded
	// JSON or YAML); keys not given take the algorithm's defaults.
	Config map[string]any
	// LogDir is the run folder; checkpoints go into it.
	LogDir string
	// Seed makes a run reproducible: same seed, same run.
	Seed int64
	// Decoded, when not nil, is Config already decoded over the
	// algorithm's defaults and validated by the caller (the platform does
	// this before it writes anything), as a pointer to the algorithm's
	// config struct: DecodeConfig then takes it as it is instead of
	// decoding Config a second time.
	Decoded Validator
}

// Factory creates an agent.
type Factory func(ctx context.Context, opts Options) (Agent, error)

// Algorithm describes a registered algorithm.
type Algorithm struct {
	// Name is what users type after --alg, e.g. "PPO".
	Name string
	// New creates an agent.
	New Factory
	// DefaultConfig returns the default configuration, the value printed
	// by `train --alg NAME --show-config`.
	DefaultConfig func() any
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

// Result is what one training iteration reports. The platform adds the
// bookkeeping keys (date, hostname, pid, time_total_s, ...) when it logs it.
type Result struct {
	TrainingIteration int     `json:"training_iteration"`
	TimestepsTotal    int64   `json:"timesteps_total"`
	TimestepsThisIter int64   `json:"timesteps_this_iter"`
	EpisodesTotal     int64   `json:"episodes_total"`
	EpisodesThisIter  int     `json:"episodes_this_iter"`
	EpisodeRewardMean float64 `json:"episode_reward_mean"`
	EpisodeRewardMin  float64 `json:"episode_reward_min"`
	EpisodeRewardMax  float64 `json:"episode_reward_max"`
	EpisodeLenMean    float64 `json:"episode_len_mean"`
	TimeThisIterS     float64 `json:"time_this_iter_s"`
	// Learner holds the algorithm's statistics: for PPO policy_loss,
	// vf_loss, total_loss, entropy, kl, kl_coeff, cur_lr, explained_variance.
	Learner map[string]float64 `json:"learner,omitempty"`
	// Extra holds any further numeric results (e.g. evaluation returns).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Decode fills dst, a pointer to an algorithm's config struct already set to
// its defaults, from the user's config. Keys are matched against dst's json
// tags; an unknown key or a value of the wrong type is an error that names
// the key, what was given and what is expected.
func Decode(alg string, cfg map[string]any, dst any) error {
	if len(cfg) == 0 {
		return nil
	}
	known := jsonFields(dst)
	for key := range cfg {
		if _, ok := known[key]; !ok {
			return fmt.Errorf("%s config: unknown key %q; known keys: %s", alg, key, strings.Join(sortedKeys(known), ", "))
		}
	}
	for key, val := range cfg {
		raw, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("%s config: key %q: %w", alg, key, err)
		}
		field := known[key]
		if err := json.Unmarshal(raw, field.ptr); err != nil {
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &te) && te.Field != "" && te.Type != nil:
				// A nested config (such as "model"): name the full key path.
				return fmt.Errorf("%s config: key %q must be %s, got %s", alg, key+"."+te.Field, describeType(te.Type), te.Value)
			case errors.As(err, &te) || isSyntaxOrType(err):
				return fmt.Errorf("%s config: key %q must be %s, got %s", alg, key, describeType(field.typ), raw)
			}
			// A nested config's own check (such as an unknown model key).
			return fmt.Errorf("%s config: key %q: %w", alg, key, err)
		}
	}
	return nil
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
	a.New = func(ctx context.Context, opts Options) (Agent, error) {
		cfg, err := envs.NormalizeConfig(envs.Config(opts.EnvConfig))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		opts.EnvConfig = cfg
		return create(ctx, opts)
	}
	return a
}
