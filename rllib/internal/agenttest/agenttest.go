// Package agenttest holds the scaffolding the algorithms' tests share:
// a TestMain that serves worker actors and starts the runtime, helpers to
// create an agent and train it, failing the test on error, and the checks
// every algorithm's checkpoints and tuned experiment files go through.
package agenttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/graytest"
	"github.com/gray-ml/gray/rllib"
	"gopkg.in/yaml.v3"
)

// Main is a test binary's TestMain: when the binary runs as a gray worker
// it serves the package's actors; otherwise it starts the runtime with
// cpus CPUs, runs the tests and shuts the runtime down.
func Main(m *testing.M, cpus int) { MainWith(m, gray.Options{NumCPUs: cpus}) }

// MainWith is Main with the runtime's options (a declared GPU, say).
func MainWith(m *testing.M, opts gray.Options) { graytest.Main(m, opts) }

// FromKeys is newAgent (an algorithm's New) taking the user's config keys,
// decoded over defaults() as train decodes them (rllib.Decode), for tests
// that give their configs as keys.
func FromKeys[C any, PC interface {
	*C
	rllib.Config
}, A rllib.Agent](alg string, defaults func() C, newAgent func(context.Context, rllib.Options, C) (A, error)) func(context.Context, rllib.Options, map[string]any) (A, error) {
	return func(ctx context.Context, opts rllib.Options, keys map[string]any) (A, error) {
		cfg := defaults()
		if err := rllib.Decode(alg, keys, PC(&cfg)); err != nil {
			var none A
			return none, err
		}
		return newAgent(ctx, opts, cfg)
	}
}

// New creates an agent with newAgent from the config keys and stops it
// when the test ends. An empty opts.LogDir becomes a fresh temporary
// folder, so the agent can Save.
func New[A rllib.Agent](t testing.TB, newAgent func(context.Context, rllib.Options, map[string]any) (A, error), opts rllib.Options, keys map[string]any) A {
	t.Helper()
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	a, err := newAgent(context.Background(), opts, keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	return a
}

// Maker is New for one algorithm: the agent on env with the config keys
// and seed, stopped when the test ends.
func Maker[A rllib.Agent](newAgent func(context.Context, rllib.Options, map[string]any) (A, error)) func(t testing.TB, env string, keys map[string]any, seed int64) A {
	return func(t testing.TB, env string, keys map[string]any, seed int64) A {
		t.Helper()
		return New(t, newAgent, rllib.Options{Env: env, Seed: seed}, keys)
	}
}

// Registered checks that the algorithm name is registered (rllib.Lookup,
// in any case) with its typed defaults: its DefaultConfig is a *C for
// which isDefault holds.
func Registered[C any, PC interface {
	*C
	rllib.Config
}](t testing.TB, name string, isDefault func(*C) bool) {
	t.Helper()
	alg, err := rllib.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, ok := alg.DefaultConfig().(PC); !ok || !isDefault(cfg) {
		t.Errorf("%s: DefaultConfig() = %#v, want the typed defaults", name, alg.DefaultConfig())
	}
}

// Refuses returns a check that newAgent refuses the config keys, on
// CartPole-v1, with an error containing want: a table of bad configs is
// one call of it a row.
func Refuses[A rllib.Agent](t testing.TB, newAgent func(context.Context, rllib.Options, map[string]any) (A, error)) func(keys map[string]any, want string) {
	return func(keys map[string]any, want string) {
		t.Helper()
		a, err := newAgent(context.Background(), rllib.Options{Env: "CartPole-v1"}, keys)
		if err == nil {
			_ = a.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %v: error %v, want one mentioning %s", keys, err, want)
		}
	}
}

// Train runs iters training iterations and returns the last result.
func Train(t testing.TB, a rllib.Agent, iters int) rllib.Result {
	t.Helper()
	var r rllib.Result
	for range iters {
		var err error
		if r, err = a.Train(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TrainFails checks that a's next Train fails with an error of type E
// whose text contains want, and leaves a's weights and iteration count as
// they were.
func TrainFails[E error](t testing.TB, a Weighted, want string) {
	t.Helper()
	before, iter := a.Weights(), a.Iteration()
	_, err := a.Train(context.Background())
	var e E
	if !errors.As(err, &e) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Train: %v, want a %T naming %q", err, e, want)
	}
	if !slices.Equal(before, a.Weights()) || a.Iteration() != iter {
		t.Error("a failed iteration changed the weights or the iteration count")
	}
}

// Experiment reads the experiment file at path (a configs/*.yaml) and
// fails the test unless it runs alg on env; it returns the file's config
// keys, for a test that checks the algorithm knows them all.
func Experiment(t testing.TB, path, alg, env string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Env    string         `yaml:"env"`
		Alg    string         `yaml:"alg"`
		Config map[string]any `yaml:"config"`
	}
	if err := yaml.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	if exp.Alg != alg || exp.Env != env {
		t.Fatalf("%s: alg %q env %q, want %q on %q", path, exp.Alg, exp.Env, alg, env)
	}
	return exp.Config
}

// Checkpoint saves a and returns the checkpoint folder, failing the test
// unless the folder is named after a's iteration.
func Checkpoint(t testing.TB, a rllib.Agent) string {
	t.Helper()
	path, err := a.Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("checkpoint_%d", a.Iteration()); filepath.Base(path) != want {
		t.Errorf("checkpoint path %q, want .../%s", path, want)
	}
	return path
}

// Restored is a fresh agent (made by fresh) restored from the checkpoint
// at path.
func Restored[A rllib.Agent](t testing.TB, fresh func() A, path string) A {
	t.Helper()
	a := fresh()
	if err := a.Restore(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	return a
}

// Weighted is an agent whose weights a test compares.
type Weighted interface {
	rllib.Agent
	Weights() []float64
}

// TrainAlike trains a and b, two agents restored from one checkpoint, for
// iters iterations and fails the test unless they end alike: the same
// weights and timesteps, at iteration want.
func TrainAlike(t testing.TB, a, b Weighted, iters, want int) {
	t.Helper()
	ra, rb := Train(t, a, iters), Train(t, b, iters)
	if !slices.Equal(a.Weights(), b.Weights()) || ra.TrainingIteration != want || ra.TimestepsTotal != rb.TimestepsTotal {
		t.Errorf("two agents restored from one checkpoint and trained on differ (iterations %d and %d, want %d; timesteps %d and %d)",
			ra.TrainingIteration, rb.TrainingIteration, want, ra.TimestepsTotal, rb.TimestepsTotal)
	}
}

// RefusesOther checks that the checkpoint at path, written by an agent of
// algorithm alg on CartPole-v1, is refused with an error naming the cause:
// by other, an agent of another environment, and by a once the header
// says the checkpoint is of algorithm otherAlg. It rewrites the header, so
// it goes last.
func RefusesOther(t testing.TB, a, other rllib.Agent, path, alg, otherAlg string) {
	t.Helper()
	ctx := context.Background()
	if err := other.Restore(ctx, path); err == nil || !strings.Contains(err.Error(), "CartPole-v1") {
		t.Errorf("restoring a CartPole checkpoint into an agent of another environment: %v, want an error naming the environments", err)
	}
	meta := filepath.Join(path, rllib.CheckpointMetaFile)
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(strings.Replace(string(raw), strconv.Quote(alg), strconv.Quote(otherAlg), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(ctx, path); err == nil || !strings.Contains(err.Error(), otherAlg) {
		t.Errorf("restoring a %s checkpoint: %v, want an error naming the algorithm", otherAlg, err)
	}
}
