package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ExperimentSpec is one experiment of an experiment file (YAML or JSON):
//
//	cartpole-ppo-sweep:
//	  run: PPO
//	  env: CartPole-v1
//	  stop: {episode_reward_mean: 475, training_iteration: 100}   # each trial
//	  stop_experiment: {episode_reward_mean: 475}               # optional: the whole sweep, once any trial gets there
//	  num_samples: 2
//	  metric: episode_reward_mean
//	  mode: max
//	  resources_per_trial: {cpu: 1, gpu: 0}   # default: 1 CPU + num_workers (AgentResources)
//	                                          # {cpu: 3, extra_cpu: 2}: 2 of the 3 for worker actors the trial starts
//	  scheduler: {type: asha, max_t: 100, grace_period: 5, reduction_factor: 3}
//	  search_alg: {type: tpe, n_startup: 8, max_concurrent: 4}
//	  time_budget_s: 3600                     # optional: end this run after an hour; --resume continues
//	  config:
//	    lr: {loguniform: [1.0e-5, 1.0e-3]}
//	    train_batch_size: {grid_search: [2000, 4000]}
//
// Experiment files are read by package platform/config, the one parser of
// them (with line and column in its errors); SpecFromMap turns the decoded
// keys into a spec.
type ExperimentSpec struct {
	Name string `json:"name"`
	// Run (or its synonym Alg, as in the platform's files) names the
	// algorithm.
	Run                 string             `json:"run"`
	Alg                 string             `json:"alg"`
	Env                 string             `json:"env"`
	EnvConfig           map[string]any     `json:"env_config"`
	Config              map[string]any     `json:"config"`
	Stop                map[string]float64 `json:"stop"`
	StopExperiment      map[string]float64 `json:"stop_experiment"`
	NumSamples          int                `json:"num_samples"`
	Metric              string             `json:"metric"`
	Mode                Mode               `json:"mode"`
	Resources           *Resources         `json:"resources_per_trial"`
	CheckpointFreq      int                `json:"checkpoint_freq"`
	CheckpointAtEnd     bool               `json:"checkpoint_at_end"`
	KeepCheckpointsNum  int                `json:"keep_checkpoints_num"`
	CheckpointScoreAttr string             `json:"checkpoint_score_attr"`
	MaxFailures         int                `json:"max_failures"`
	MaxConcurrent       int                `json:"max_concurrent"`
	// TimeBudgetS bounds each run (or resume) in seconds; see
	// Experiment.TimeBudget.
	TimeBudgetS float64        `json:"time_budget_s"`
	Seed        int64          `json:"seed"`
	Scheduler   map[string]any `json:"scheduler"`
	SearchAlg   map[string]any `json:"search_alg"`
	LocalDir    string         `json:"local_dir"`
	// NumCPUs is the node's CPUs trials share (0: all).
	NumCPUs int `json:"num_cpus"`
}

func decodeSpec(name string, m map[string]any) (*ExperimentSpec, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("tune: experiment %q: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s ExperimentSpec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("tune: experiment %q: %w (known keys: %s)", name, err, strings.Join(jsonKeys(ExperimentSpec{}), ", "))
	}
	if s.Name == "" {
		s.Name = name
	}
	if s.Run != "" && s.Alg != "" && !strings.EqualFold(s.Run, s.Alg) {
		return nil, fmt.Errorf("tune: experiment %q: alg (%s) and run (%s) disagree; give one", s.Name, s.Alg, s.Run)
	}
	if s.Run == "" {
		s.Run = s.Alg
	}
	if s.NumCPUs < 0 {
		return nil, fmt.Errorf("tune: experiment %q: num_cpus must be 0 (all) or more, got %d", s.Name, s.NumCPUs)
	}
	if s.Name == "" {
		return nil, fmt.Errorf("tune: the experiment needs a name (a name key, or the map key above its settings)")
	}
	if s.Config == nil {
		s.Config = map[string]any{}
	}
	return &s, nil
}

func jsonKeys(v any) []string {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// BuildOptions are what the caller (the platform) supplies to turn a spec
// into an Experiment.
type BuildOptions struct {
	// ResultsDir is the folder experiments go in (default: the spec's
	// local_dir, else "gray_results"); the experiment folder is
	// ResultsDir/<name>.
	ResultsDir string
	// Trainable overrides the default AgentTrainable(run, env, env_config,
	// seed).
	Trainable TrainableFactory
	// Logger, Reporter and NodeResources are passed through.
	Logger        LoggerFactory
	Reporter      Reporter
	NodeResources Resources
}

// Build validates the spec and makes the Experiment: search space,
// searcher and scheduler included. Call it again (with the same file) to
// resume.
func (s *ExperimentSpec) Build(opts BuildOptions) (Experiment, error) {
	space, err := ParseSpace(s.Config)
	if err != nil {
		return Experiment{}, fmt.Errorf("experiment %q: %w", s.Name, err)
	}
	root := opts.ResultsDir
	if root == "" {
		root = s.LocalDir
	}
	if root == "" {
		root = "gray_results"
	}
	exp := Experiment{
		Name: s.Name, Dir: filepath.Join(root, s.Name), Space: space, NumSamples: s.NumSamples,
		Metric: s.Metric, Mode: s.Mode, Stop: s.Stop, StopExperiment: s.StopExperiment, CheckpointFreq: s.CheckpointFreq,
		CheckpointAtEnd: s.CheckpointAtEnd, KeepCheckpointsNum: s.KeepCheckpointsNum,
		CheckpointScoreAttr: s.CheckpointScoreAttr, MaxFailures: s.MaxFailures,
		MaxConcurrent: s.MaxConcurrent, Seed: s.Seed, Logger: opts.Logger, Reporter: opts.Reporter,
		NodeResources: opts.NodeResources, Trainable: opts.Trainable,
	}
	if s.TimeBudgetS < 0 || math.IsNaN(s.TimeBudgetS) || math.IsInf(s.TimeBudgetS, 0) {
		return Experiment{}, fmt.Errorf("tune: experiment %q: time_budget_s is %v; give the seconds a run may take (0 or omitted: no limit)", s.Name, s.TimeBudgetS)
	}
	exp.TimeBudget = time.Duration(s.TimeBudgetS * float64(time.Second))
	if s.Resources != nil {
		exp.Resources = *s.Resources
	} else {
		exp.TrialResources = AgentResources
	}
	if exp.NodeResources == (Resources{}) && s.NumCPUs > 0 {
		exp.NodeResources.CPU = float64(s.NumCPUs)
	}
	if exp.Trainable == nil {
		if s.Run == "" {
			return Experiment{}, fmt.Errorf("tune: experiment %q needs run: the algorithm to train (e.g. PPO)", s.Name)
		}
		if s.Env == "" {
			return Experiment{}, fmt.Errorf("tune: experiment %q needs env: the environment to train on", s.Name)
		}
		exp.Trainable = AgentTrainable(s.Run, s.Env, s.EnvConfig, s.Seed)
	}
	if exp.Scheduler, err = buildScheduler(s.Scheduler); err != nil {
		return Experiment{}, fmt.Errorf("experiment %q: %w", s.Name, err)
	}
	if exp.Searcher, err = buildSearcher(s.SearchAlg, space, s.NumSamples, s.Seed); err != nil {
		return Experiment{}, fmt.Errorf("experiment %q: %w", s.Name, err)
	}
	return exp, nil
}

// strictInto decodes opts (minus "type") into dst, rejecting unknown keys.
func strictInto(kind string, opts map[string]any, dst any) error {
	m := make(map[string]any, len(opts))
	for k, v := range opts {
		if k != "type" {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("tune: %s options: %w (known: %s)", kind, err, strings.Join(jsonKeys(dst), ", "))
	}
	return nil
}

func buildScheduler(opts map[string]any) (Scheduler, error) {
	if opts == nil {
		return FIFO{}, nil
	}
	kind, _ := opts["type"].(string)
	switch strings.ToLower(kind) {
	case "fifo":
		return FIFO{}, strictInto("fifo", opts, &struct{}{})
	case "median_stopping", "median":
		var c MedianStoppingConfig
		if err := strictInto("median_stopping", opts, &c); err != nil {
			return nil, err
		}
		return NewMedianStopping(c)
	case "hyperband":
		var c HyperBandConfig
		if err := strictInto("hyperband", opts, &c); err != nil {
			return nil, err
		}
		return NewHyperBand(c)
	case "asha", "async_hyperband":
		var c ASHAConfig
		if err := strictInto("asha", opts, &c); err != nil {
			return nil, err
		}
		return NewASHA(c)
	case "pbt":
		var c PBTConfig
		if err := strictInto("pbt", opts, &c); err != nil {
			return nil, err
		}
		return NewPBT(c)
	}
	return nil, fmt.Errorf("tune: scheduler type %q unknown; use fifo, median_stopping, hyperband, asha or pbt", kind)
}

func buildSearcher(opts map[string]any, space map[string]any, numSamples int, seed int64) (Searcher, error) {
	kind, _ := opts["type"].(string)
	opts = copyMap(opts) // Build may run again (resume): leave the spec as it is
	maxConc := 0
	if v, ok := opts["max_concurrent"]; ok {
		f, ok := toFloat(v)
		if !ok || f < 1 {
			return nil, fmt.Errorf("tune: search_alg max_concurrent must be a number >= 1, got %s", show(v))
		}
		maxConc = int(f)
		delete(opts, "max_concurrent")
	}
	var s Searcher
	switch strings.ToLower(kind) {
	case "", "basic", "random", "grid":
		var c struct{}
		if err := strictInto("search_alg", opts, &c); err != nil {
			return nil, err
		}
		g, err := NewBasicVariantGenerator(space, numSamples, seed)
		if err != nil {
			return nil, err
		}
		s = g
	case "tpe":
		c := TPEConfig{NumSamples: numSamples, Seed: seed}
		if err := strictInto("tpe", opts, &c); err != nil {
			return nil, err
		}
		t, err := NewTPE(space, c)
		if err != nil {
			return nil, err
		}
		s = t
	default:
		return nil, fmt.Errorf("tune: search_alg type %q unknown; use basic or tpe", kind)
	}
	if maxConc > 0 {
		return NewConcurrencyLimiter(s, maxConc)
	}
	return s, nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SpecFromMap decodes one experiment's settings already read by the caller
// (platform/config, from `train -f`): unknown keys are errors naming the
// experiment and the key.
func SpecFromMap(name string, m map[string]any) (*ExperimentSpec, error) {
	return decodeSpec(name, normalizeYAML(m).(map[string]any))
}

// IsSweep reports whether the spec needs Tune: a search space anywhere in
// its config, more than one sample, a scheduler or a search algorithm. A
// spec that is not a sweep is a single run the platform can train itself.
func (s *ExperimentSpec) IsSweep() bool {
	if s.NumSamples > 1 || s.Scheduler != nil || s.SearchAlg != nil {
		return true
	}
	space, err := ParseSpace(s.Config)
	if err != nil {
		return true // let Build report the malformed space
	}
	var leaves []leaf
	findDomains(space, nil, &leaves)
	return len(leaves) > 0
}

// RunSpec builds the experiment and runs it, or resumes it from its folder
// when resume is set: what `train -f sweep.yaml [--resume]` does.
func RunSpec(ctx context.Context, s *ExperimentSpec, opts BuildOptions, resume bool) (*Analysis, error) {
	exp, err := s.Build(opts)
	if err != nil {
		return nil, err
	}
	if resume {
		return Resume(ctx, exp)
	}
	return Run(ctx, exp)
}
