package tune

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"time"
)

// Experiment describes a sweep.
type Experiment struct {
	// Name labels the experiment (default: the folder's base name).
	Name string
	// Dir is the experiment folder; it must not already hold an experiment
	// (use Resume for that).
	Dir string
	// Trainable makes the trainable of each trial.
	Trainable TrainableFactory
	// Space is the search space: a config whose leaves may be Domains.
	Space map[string]any
	// NumSamples repeats the grid this many times (default searcher only).
	NumSamples int
	// Searcher suggests configs (default: BasicVariantGenerator over Space
	// with NumSamples and Seed).
	Searcher Searcher
	// Scheduler decides early stopping (default FIFO).
	Scheduler Scheduler
	// Metric and Mode are what schedulers, searchers and BestTrial
	// optimise. A metric the first result lacks is an error.
	Metric string
	Mode   Mode
	// Stop ends a trial when any result key reaches its value (>=), e.g.
	// {"training_iteration": 100, "episode_reward_mean": 475}.
	Stop map[string]float64
	// StopFunc, if set, ends a trial when it returns true.
	StopFunc func(trialID string, result map[string]any) bool
	// StopExperiment ends the whole experiment when any trial's result
	// reaches any of these values (>=), e.g. {"episode_reward_mean": 475}
	// to stop searching once a config solves the task: running trials end
	// after their current step, waiting ones end unstarted and the
	// searcher suggests no more. Resume then has nothing to continue.
	StopExperiment map[string]float64
	// Resources each trial holds (default 1 CPU, or TrialResources);
	// NodeResources what the node offers (default: all CPUs, no GPU; on a
	// cluster, what its nodes offer, followed as nodes join and die).
	Resources     Resources
	NodeResources Resources
	// Placement says where trials' trainables run: in this process, or
	// each in a gray actor of its own, which on a cluster may be on any
	// node (default PlaceAuto: actors when gray runs on a cluster and the
	// trainable is one the workers can make, see Registered).
	Placement Placement
	// TrialResources, when Resources is not set, sizes each trial from its
	// sampled config, so that a trial that starts its own worker actors
	// holds their CPUs too. AgentResources (1 CPU + num_workers) is what
	// experiment files of agents get by default.
	TrialResources func(config map[string]any) Resources
	// MaxConcurrent caps running trials regardless of resources (0: none).
	MaxConcurrent int
	// CheckpointFreq saves every this many iterations (0: never);
	// CheckpointAtEnd saves when a trial terminates.
	CheckpointFreq  int
	CheckpointAtEnd bool
	// KeepCheckpointsNum keeps the best N checkpoints per trial by
	// CheckpointScoreAttr (default: the newest); the newest is always kept.
	KeepCheckpointsNum  int
	CheckpointScoreAttr string
	// MaxFailures retries a failed trial from its last checkpoint this many
	// times before marking it ERROR.
	MaxFailures int
	// Seed seeds the default searcher.
	Seed int64
	// Logger opens each trial's run-folder logger (default JSONLogger).
	Logger LoggerFactory
	// Reporter shows progress (default none); see NewTableReporter.
	Reporter Reporter
	// ReportInterval between Reporter updates (default 1s).
	ReportInterval time.Duration
	// TimeBudget, if set, bounds this run (Run, or one Resume) in wall
	// time: once spent, no trial starts, running trials end after their
	// current step as if a stop criterion were met (with a checkpoint if
	// CheckpointAtEnd), and trials not started or paused stay unfinished:
	// Resume continues them, with a budget of its own.
	TimeBudget time.Duration

	// liveNodes: NodeResources was not set and gray runs on a cluster, so
	// the runner follows the cluster's resources as nodes join and die.
	liveNodes bool
	// actors: trials run in gray actors (Placement).
	actors bool
}

// Analysis is what a finished (or interrupted) experiment returns.
type Analysis struct {
	Dir    string
	Trials []*Trial
	// BudgetSpent reports that the run ended on its TimeBudget with work
	// left: unfinished trials, or trials the searcher has yet to suggest.
	BudgetSpent bool
	// Ended says which result met Experiment.StopExperiment, if one did
	// (in this run or an earlier one): "trial 00003 reached score >= 50".
	Ended string
}

// Unfinished returns the trials that neither terminated nor failed: those
// Resume would continue.
func (a *Analysis) Unfinished() []*Trial {
	var out []*Trial
	for _, t := range a.Trials {
		if !t.Status.terminal() {
			out = append(out, t)
		}
	}
	return out
}

// Best returns the trial with the best last value of metric.
func (a *Analysis) Best(metric string, mode Mode) (*Trial, error) {
	var best *Trial
	var bestScore float64
	for _, t := range a.Trials {
		v, ok := t.Metric(metric)
		if !ok {
			continue
		}
		if s := mode.score(v); best == nil || s > bestScore {
			best, bestScore = t, s
		}
	}
	if best == nil {
		return nil, fmt.Errorf("tune: no trial reported %q", metric)
	}
	return best, nil
}

func (e *Experiment) defaults() error {
	if e.Dir == "" {
		return errors.New("tune: Experiment.Dir (the experiment folder) is required")
	}
	if e.Trainable == nil {
		return errors.New("tune: Experiment.Trainable is required")
	}
	if e.Name == "" {
		e.Name = filepath.Base(e.Dir)
	}
	if e.Resources == (Resources{}) {
		// With TrialResources this is only the least a trial needs: the
		// runner asks for another trial only when it would fit.
		e.Resources.CPU = 1
	} else {
		e.TrialResources = nil
	}
	if err := e.Placement.check(); err != nil {
		return err
	}
	actors, err := e.inActors(e.Trainable())
	if err != nil {
		return err
	}
	e.actors = actors
	if e.NodeResources == (Resources{}) {
		if cl, ok := clusterResources(); ok {
			e.NodeResources, e.liveNodes = cl, true
		} else {
			e.NodeResources.CPU = float64(runtime.NumCPU())
		}
	}
	if err := e.Resources.check(); err != nil {
		return fmt.Errorf("tune: resources per trial: %w", err)
	}
	if !e.Resources.fits(Resources{}, e.NodeResources) {
		return fmt.Errorf("tune: each trial needs %v but the node has %v; lower resources_per_trial or add resources", e.Resources, e.NodeResources)
	}
	if e.Mode == "" {
		e.Mode = Max
	}
	if !e.Mode.valid() {
		return fmt.Errorf("tune: mode must be %q or %q, got %q", Max, Min, e.Mode)
	}
	if e.MaxFailures < 0 || e.CheckpointFreq < 0 || e.KeepCheckpointsNum < 0 || e.MaxConcurrent < 0 {
		return errors.New("tune: max_failures, checkpoint_freq, keep_checkpoints_num and max_concurrent must not be negative")
	}
	if e.Logger == nil {
		e.Logger = JSONLogger
	}
	if e.ReportInterval == 0 {
		e.ReportInterval = time.Second
	}
	if e.Searcher == nil {
		g, err := NewBasicVariantGenerator(e.Space, e.NumSamples, e.Seed)
		if err != nil {
			return err
		}
		e.Searcher = g
	}
	if e.Scheduler == nil {
		e.Scheduler = FIFO{}
	}
	if err := e.Scheduler.SetMetric(e.Metric, e.Mode); err != nil {
		return err
	}
	if ms, ok := e.Searcher.(metricSetter); ok {
		if err := ms.setMetric(e.Metric, e.Mode); err != nil {
			return err
		}
	}
	return nil
}

func typeName(v any) string { return reflect.TypeOf(v).String() }

func (e *Experiment) meta() (*experimentMeta, error) {
	fp, err := SpaceFingerprint(e.Space)
	if err != nil {
		return nil, err
	}
	return &experimentMeta{
		Format: formatVersion, Name: e.Name, Space: []byte(fp), NumSamples: e.NumSamples,
		Metric: e.Metric, Mode: e.Mode, Searcher: typeName(e.Searcher), Scheduler: typeName(e.Scheduler),
		Stop: e.Stop, Created: time.Now().UTC(),
	}, nil
}
