package rllib

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/schedule"
)

// Config is an algorithm's configuration: a pointer to its config struct
// for a Go algorithm, a MapConfig for a plugin whose defaults live in its
// own process. A config is decoded from the user's keys once
// (Algorithm.Decode) and handed to the algorithm's New as it is.
type Config interface {
	// Validate returns an error naming the first key out of range.
	Validate() error
}

// MapConfig is a plugin algorithm's config: the user's keys, which the
// plugin decodes and checks itself.
type MapConfig map[string]any

// Validate implements Config: the plugin checks its own keys.
func (MapConfig) Validate() error { return nil }

// Common holds the keys every algorithm has. Each algorithm's config
// struct embeds it untagged, so its keys sit at the top level of the
// JSON and YAML beside the algorithm's own; a key every algorithm gains is
// one field here (and its range one line in Common.Check).
type Common struct {
	// NumWorkers is the number of worker actors; each reserves one CPU.
	// What 0 means is the algorithm's (most sample in the driver).
	NumWorkers int `json:"num_workers"`
	// Seed, when set, overrides the run's seed (Options.Seed).
	Seed *int64 `json:"seed"`
	// NumGPUs is RLlib's num_gpus: the GPUs the learner uses. Which values
	// an algorithm accepts is its own check (PPO: 0 or 1; the others learn
	// on the CPU only and call CheckCPUOnly).
	NumGPUs float64 `json:"num_gpus"`
}

// Check checks the common keys' ranges.
func (c *Common) Check(ck *Check) {
	ck.Key("num_workers", c.NumWorkers >= 0, "must be 0 or more")
}

// CheckCPUOnly is the num_gpus check of an algorithm that learns on the
// CPU only: 0 is the one value accepted.
func (c *Common) CheckCPUOnly(ck *Check) {
	ck.Key("num_gpus", c.NumGPUs == 0, fmt.Sprintf("(%g): %s learns on the CPU only for now; set num_gpus: 0 (PPO has a GPU learner)", c.NumGPUs, ck.alg))
}

// Workers returns num_workers: the worker actors the agent starts, each
// reserving one CPU. The train command sizes its own runtime by it.
func (c *Common) Workers() int { return c.NumWorkers }

// RunSeed is the seed an agent uses: the config's "seed" key when it is
// set, else the run's seed.
func (c *Common) RunSeed(runSeed int64) int64 {
	if c.Seed != nil {
		return *c.Seed
	}
	return runSeed
}

// Training holds the keys of the algorithms that learn by gradient steps
// on sampled experience (PPO, A3C, DQN): the common ones and their own.
// Such an algorithm's config embeds it in place of Common.
type Training struct {
	Common
	// NumEnvsPerWorker is the number of environments each sampler steps
	// together.
	NumEnvsPerWorker int `json:"num_envs_per_worker"`
	// Gamma is the discount factor.
	Gamma float64 `json:"gamma"`
	// LR is the Adam learning rate; LRSchedule, a list of [timestep, lr]
	// points interpolated linearly, overrides it.
	LR         float64      `json:"lr"`
	LRSchedule [][2]float64 `json:"lr_schedule"`
	// GradClip is the global gradient-norm limit; 0 disables clipping.
	GradClip float64 `json:"grad_clip"`
	// MetricsSmoothingEpisodes is the number of most recent episodes the
	// reported episode statistics average over.
	MetricsSmoothingEpisodes int `json:"metrics_smoothing_episodes"`
	// NumLearnerThreads is the number of goroutines each learner step
	// is split over (PPO and DQN: each gradient step, in fixed shards whose
	// gradients are summed in a fixed order, so that a seed and a thread
	// count give the same run anywhere; A3C: the driver's check and Adam
	// step of each runner's gradient, whose weights do not depend on it).
	// Unset, it is the CPUs the learner reserves: the runtime's less one
	// per worker actor (LearnerThreads).
	NumLearnerThreads *int `json:"num_learner_threads"`
}

// DefaultTraining returns the training keys' shared defaults, which an
// algorithm's DefaultConfig starts from and changes where its own tuning
// differs: one environment per sampler, a discount of 0.99, Adam at 1e-3,
// no gradient clipping, episode statistics over the last 100 episodes,
// no worker actors.
func DefaultTraining() Training {
	return Training{NumEnvsPerWorker: 1, Gamma: 0.99, LR: 1e-3, MetricsSmoothingEpisodes: 100}
}

// Check checks the training keys' ranges (the common ones are NewCheck's).
func (c *Training) Check(ck *Check) {
	ck.Key("num_envs_per_worker", c.NumEnvsPerWorker >= 1, "must be at least 1")
	ck.Key("gamma", Finite(c.Gamma) && c.Gamma >= 0 && c.Gamma <= 1, "must be in [0, 1]")
	ck.Key("lr", Finite(c.LR) && c.LR > 0, "must be positive")
	ck.Key("grad_clip", Finite(c.GradClip) && c.GradClip >= 0, "must be 0 (off) or positive")
	ck.Key("metrics_smoothing_episodes", c.MetricsSmoothingEpisodes >= 1, "must be at least 1")
	if len(c.LRSchedule) > 0 {
		_, err := schedule.NewPiecewise(c.LRSchedule)
		ck.Key("lr_schedule", err == nil, fmt.Sprintf("is not a valid schedule: %v", err))
	}
	ck.LearnerThreads(c.NumLearnerThreads, c.NumWorkers)
}

// LearningRate is the learning rate as a function of timesteps.
func (c *Training) LearningRate() schedule.Piecewise { return schedule.LR(c.LR, c.LRSchedule) }

// LearnerThreads implements LearnerThreadsConfig.
func (c *Training) LearnerThreads() (*int, int) { return c.NumLearnerThreads, c.NumWorkers }

// Samplers is the number of samplers: the num_workers rollout workers, or
// the driver's own when there are none.
func (c *Training) Samplers() int { return max(1, c.NumWorkers) }

// StepsPerEnv is the number of steps each of the samplers' environments
// takes for at least total steps in all (rounded up).
func (c *Training) StepsPerEnv(total int) int {
	envs := c.Samplers() * c.NumEnvsPerWorker
	return (total + envs - 1) / envs
}

// Check collects a config's range checks: Key checks one key, Err returns
// the first that failed as "<alg> config: <key> <msg>". An algorithm's
// Validate starts one with NewCheck, checks its own keys, adds the shared
// checks it needs (Model, FeedForward, LearnerThreads) and returns Err.
type Check struct {
	alg string
	err error
}

// NewCheck starts the range checks of alg's config with the keys every
// algorithm has (common; Common.Check).
func NewCheck(alg string, common *Common) *Check {
	ck := &Check{alg: alg}
	common.Check(ck)
	return ck
}

// Key fails the check with "<key> <msg>" unless ok; only the first failure
// is kept.
func (c *Check) Key(key string, ok bool, msg string) {
	if c.err == nil && !ok {
		c.err = fmt.Errorf("%s config: %s %s", c.alg, key, msg)
	}
}

// Err is the first failed key's error, or nil.
func (c *Check) Err() error { return c.err }

// fail keeps err, "<alg> config: <what>", unless an earlier check failed.
func (c *Check) fail(what string, err error) {
	if c.err == nil && err != nil {
		c.err = fmt.Errorf("%s config: %s%w", c.alg, what, err)
	}
}

// Model checks the "model" key's own values (models.ModelOptions.Validate).
func (c *Check) Model(m models.ModelOptions) { c.fail("model: ", m.Validate()) }

// FeedForward is the check of an algorithm whose networks are feed-forward
// only: the model asks for no recurrent layer (use_lstm).
func (c *Check) FeedForward(m models.ModelOptions) { c.fail("", m.CheckFeedForward(c.alg)) }

// LearnerThreads checks num_learner_threads (CheckLearnerThreads): at least
// 1 when given; the runtime's CPUs are checked when the agent starts
// (LearnerThreads).
func (c *Check) LearnerThreads(set *int, numWorkers int) {
	if c.err == nil {
		c.err = CheckLearnerThreads(c.alg, set, numWorkers, 0)
	}
}

// Finite reports whether x is neither NaN nor infinite.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Decode fills dst, a pointer to an algorithm's config struct already set to
// its defaults, from the user's keys. Keys are matched against dst's json
// tags (those of embedded structs such as Common included); an unknown key
// or a value of the wrong type is an error that names the key, what was
// given and what is expected. The keys are encoded once and each is
// decoded straight into its field.
func Decode(alg string, user map[string]any, dst any) error {
	if len(user) == 0 {
		return nil
	}
	known := map[string]configField{}
	jsonFields(reflect.ValueOf(dst).Elem(), known)
	for key := range user {
		if _, ok := known[key]; !ok {
			return fmt.Errorf("%s config: unknown key %q; known keys: %s", alg, key, strings.Join(sortedKeys(known), ", "))
		}
	}
	all, err := json.Marshal(user)
	if err != nil {
		return fmt.Errorf("%s config: %w", alg, err)
	}
	var raws map[string]json.RawMessage
	if err := json.Unmarshal(all, &raws); err != nil {
		return fmt.Errorf("%s config: %w", alg, err)
	}
	for _, key := range sortedKeys(known) {
		raw, given := raws[key]
		if !given {
			continue
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

type configField struct {
	ptr any
	typ reflect.Type
}

// jsonFields adds each json-tagged field of the struct v to fields, as a
// pointer to that field; the fields of an untagged embedded struct count
// as v's own, as encoding/json has them.
func jsonFields(v reflect.Value, fields map[string]configField) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			jsonFields(v.Field(i), fields)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = configField{ptr: v.Field(i).Addr().Interface(), typ: f.Type}
	}
}

func sortedKeys(m map[string]configField) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describeType names a Go type the way a user writing JSON thinks of it.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem()) + " or null"
	}
	return t.String()
}

// isSyntaxOrType reports errors of encoding/json's own type checks (as
// opposed to errors a field's UnmarshalJSON method explains itself).
func isSyntaxOrType(err error) bool {
	var se *json.SyntaxError
	var ie *json.InvalidUnmarshalError
	return errors.As(err, &se) || errors.As(err, &ie)
}
