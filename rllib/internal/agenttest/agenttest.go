// Package agenttest holds the scaffolding the algorithms' tests share:
// a TestMain that serves worker actors and starts the runtime, and helpers
// to create an agent and train it, failing the test on error.
package agenttest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
)

// Main is a test binary's TestMain: when the binary runs as a gray worker
// it serves the package's actors; otherwise it starts the runtime with
// cpus CPUs, runs the tests and shuts the runtime down.
func Main(m *testing.M, cpus int) { MainWith(m, gray.Options{NumCPUs: cpus}) }

// MainWith is Main with the runtime's options (a declared GPU, say).
func MainWith(m *testing.M, opts gray.Options) {
	gray.ServeIfWorker()
	if err := gray.Init(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = gray.Shutdown()
	os.Exit(code)
}

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
