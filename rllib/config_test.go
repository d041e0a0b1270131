package rllib

import (
	"context"
	"strings"
	"testing"

	"github.com/gray-ml/gray/envs"
)

type seededConfig struct {
	Common
	Steps int `json:"steps"`
}

func (c *seededConfig) Validate() error {
	ck := NewCheck("TEST", &c.Common)
	ck.Key("steps", c.Steps >= 1, "must be at least 1")
	return ck.Err()
}

type seededAgent struct{ Agent }

// testAlgorithm is an algorithm whose New returns the config it got.
func testAlgorithm(got *seededConfig) Algorithm {
	return Define("TEST", func() seededConfig { return seededConfig{Steps: 5} },
		func(_ context.Context, _ Options, cfg seededConfig) (*seededAgent, error) {
			*got = cfg
			return &seededAgent{}, nil
		})
}

// TestDecodeOnceAndRunSeed checks the one decoding: Decode names an
// out-of-range value, an unknown key and a common key's range; New takes
// the decoded config (the common keys included) as it is.
func TestDecodeOnceAndRunSeed(t *testing.T) {
	var got seededConfig
	alg := testAlgorithm(&got)
	for _, tc := range []struct {
		keys map[string]any
		want string
	}{
		{map[string]any{"steps": 0}, "TEST config: steps must be at least 1"},
		{map[string]any{"stpes": 3}, `unknown key "stpes"`},
		{map[string]any{"num_workers": -1}, "TEST config: num_workers must be 0 or more"},
		{map[string]any{"num_workers": "two"}, `key "num_workers" must be an integer, got "two"`},
	} {
		if _, err := alg.Decode(tc.keys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v) = %v, want an error containing %s", tc.keys, err, tc.want)
		}
	}
	if _, err := alg.Make(context.Background(), Options{}, map[string]any{"num_workers": 3, "seed": 9}); err != nil {
		t.Fatal(err)
	}
	if got.Steps != 5 || got.NumWorkers != 3 || got.RunSeed(3) != 9 {
		t.Errorf("New got %+v (run seed %d), want the defaults' steps 5, num_workers 3 and seed 9", got, got.RunSeed(3))
	}
	if _, err := alg.Make(context.Background(), Options{}, nil); err != nil || got.RunSeed(3) != 3 {
		t.Errorf("no keys: %v, run seed %d, want the run's 3", err, got.RunSeed(3))
	}
	if _, err := alg.New(context.Background(), Options{}, MapConfig{}); err == nil || !strings.Contains(err.Error(), "Algorithm.Decode") {
		t.Errorf("New with another algorithm's config: %v, want an error saying how to decode one", err)
	}
}

func TestEnvSpaces(t *testing.T) {
	obs, act, err := EnvSpaces("TEST", Options{Env: "CartPole-v1"})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Size() != 4 {
		t.Errorf("CartPole observation space %v, want a Box of 4", obs)
	}
	if act != (envs.Discrete{N: 2}) {
		t.Errorf("CartPole action space %v, want Discrete(2)", act)
	}
	if _, _, err := EnvSpaces("TEST", Options{Env: "NoSuchEnv-v0"}); err == nil || !strings.HasPrefix(err.Error(), "TEST: ") {
		t.Errorf("an unknown environment: %v, want an error starting with the algorithm", err)
	}
}

// StepsPerEnv splits a total over every environment of every sampler
// (the driver's own when num_workers is 0), rounding up so that the total
// is reached.
func TestStepsPerEnv(t *testing.T) {
	for _, tc := range []struct{ workers, envs, total, want int }{
		{0, 1, 1000, 1000},
		{0, 8, 512, 64},
		{2, 8, 512, 32},
		{3, 4, 100, 9}, // 12 environments: 9 steps each make 108 ≥ 100
	} {
		c := Training{Common: Common{NumWorkers: tc.workers}, NumEnvsPerWorker: tc.envs}
		if got := c.StepsPerEnv(tc.total); got != tc.want {
			t.Errorf("%d workers × %d envs, %d steps: %d per environment, want %d", tc.workers, tc.envs, tc.total, got, tc.want)
		}
	}
}
