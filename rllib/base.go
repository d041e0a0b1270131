package rllib

import (
	"fmt"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
)

// Base is what every agent keeps besides its own learning state: its
// algorithm's name, options, config and seed. An agent embeds it, which
// gives it LogDir and Config, the specs of its workers and its checkpoint
// files; the rest of the agent is its algorithm's own.
type Base[C any] struct {
	// Name is the algorithm's registered name; errors start with it.
	Name string
	Opts Options
	Cfg  C
	// Seed is the run's seed (Common.RunSeed).
	Seed int64
}

// Seeded is a config with the common keys (Common): a pointer to an
// algorithm's config struct.
type Seeded[C any] interface {
	*C
	Config
	RunSeed(runSeed int64) int64
}

// NewBase is where every agent's New starts: it validates cfg, takes the
// run's seed (Common.RunSeed) and builds opts.Env once to read its
// observation and action spaces (EnvSpaces), which the agent's networks
// are built for. Errors start with name.
func NewBase[C any, PC Seeded[C]](name string, opts Options, cfg C) (b Base[C], obs, act envs.Space, err error) {
	if err := PC(&cfg).Validate(); err != nil {
		return b, nil, nil, err
	}
	if obs, act, err = EnvSpaces(name, opts); err != nil {
		return b, nil, nil, err
	}
	return Base[C]{Name: name, Opts: opts, Cfg: cfg, Seed: PC(&cfg).RunSeed(opts.Seed)}, obs, act, nil
}

// LogDir implements Agent.
func (b *Base[C]) LogDir() string { return b.Opts.LogDir }

// Config returns the configuration in use (defaults plus the user's keys).
func (b *Base[C]) Config() C { return b.Cfg }

// WorkerSpec is what a worker actor is built from; it travels to the
// worker's process as the actor's constructor argument.
type WorkerSpec[C any] struct {
	Env       string
	EnvConfig map[string]any
	Config    C
	// Seed is the run's seed and Index the worker's number (0 for the
	// driver's local worker, 1..num_workers for actors).
	Seed  int64
	Index int
}

// WorkerSpec is the spec of worker index.
func (b *Base[C]) WorkerSpec(index int) WorkerSpec[C] {
	return WorkerSpec[C]{Env: b.Opts.Env, EnvConfig: b.Opts.EnvConfig, Config: b.Cfg, Seed: b.Seed, Index: index}
}

// checkpointMeta is the header file of an algorithm's checkpoint: the
// header Restore checks, and the config for people reading the folder.
type checkpointMeta[C any] struct {
	CheckpointHeader
	Config C `json:"config"`
}

// TrainState is the part of a checkpoint's state that every algorithm
// keeps: its network's weights, its Adam optimizer's state and its
// counters. An algorithm's state struct embeds it and adds its own
// fields; CBOR, like JSON, keeps an embedded struct's fields at the top
// level, so the file's layout is the same as with the fields written out.
type TrainState struct {
	Weights   []float64
	Adam      models.AdamState
	Iteration int
	Timesteps int64
}

// NewTrainState holds params' weights, opt's state and the counters.
func NewTrainState(params *models.Params, opt *models.Adam, iteration int, timesteps int64) TrainState {
	return TrainState{Weights: params.GetFlat(nil), Adam: opt.State(), Iteration: iteration, Timesteps: timesteps}
}

func (s TrainState) trainState() TrainState { return s }

// Format is the layout version of a state struct embedding TrainState,
// written into the checkpoint's header and checked by Restore: 1, every
// algorithm's first layout. An algorithm whose state struct changes
// defines Format on it, returning the next number, so that an older
// checkpoint is refused with a clear error rather than decoded wrong.
func (TrainState) Format() int { return 1 }

// State is an algorithm's checkpoint state: a struct embedding TrainState,
// or a pointer to one.
type State interface {
	trainState() TrainState
	Format() int
}

// SaveState writes the checkpoint of state's iteration (SaveCheckpoint):
// the header, with the config and state's Format, and state, the
// algorithm's training state.
func (b *Base[C]) SaveState(state State) (string, error) {
	ts := state.trainState()
	h := CheckpointHeader{Algorithm: b.Name, Env: b.Opts.Env, Format: state.Format(), Iteration: ts.Iteration, TimestepsTotal: ts.Timesteps}
	return SaveCheckpoint(b.Opts.LogDir, checkpointMeta[C]{CheckpointHeader: h, Config: b.Cfg}, state)
}

// ApplyTrainState is Restore's step for the network: it checks that st
// (read from the checkpoint at path) holds as many weights as params,
// then sets opt's state and params' weights from it and runs then, the
// rest of the algorithm's state that can fail to apply (an observation
// filter, the weights its workers start from; nil if none). If any of it
// fails, params and opt are as they were and the error starts with
// "<algorithm>: Restore:", so that a refused checkpoint leaves the agent
// unchanged. The counters are the caller's to set once it succeeds.
func (b *Base[C]) ApplyTrainState(path string, st TrainState, params *models.Params, opt *models.Adam, then func() error) error {
	if err := b.CheckWeights(path, len(st.Weights), params.Len()); err != nil {
		return err
	}
	oldAdam, oldWeights := opt.State(), params.GetFlat(nil)
	if err := opt.SetState(st.Adam); err != nil {
		return fmt.Errorf("%s: Restore: %w", b.Name, err)
	}
	_ = params.SetFlat(st.Weights)
	if then == nil {
		return nil
	}
	if err := then(); err != nil {
		_ = params.SetFlat(oldWeights)
		_ = opt.SetState(oldAdam)
		return fmt.Errorf("%s: Restore: %w", b.Name, err)
	}
	return nil
}

// LoadState reads the checkpoint at path into state, a pointer to the
// algorithm's state struct (LoadCheckpoint), after checking that it is one
// of this algorithm, environment and state's Format.
func (b *Base[C]) LoadState(path string, state State) error {
	return LoadCheckpoint(path, CheckpointHeader{Algorithm: b.Name, Env: b.Opts.Env, Format: state.Format()}, state)
}

// CheckWeights is Restore's check that the checkpoint at path holds as
// many weights (got) as this agent's model has (want).
func (b *Base[C]) CheckWeights(path string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: Restore: %q holds %d weights, this agent's model has %d (different model config?)", b.Name, path, got, want)
	}
	return nil
}
