// Command faulty is a test-only environment plugin that misbehaves on
// request, so that the host's error handling can be tested against a real
// plugin process. Faults before the handshake come from the environment
// variable GRAY_FAULTY_MODE ("garbage", "version", "silent");
// faults while stepping come from the env config (see newEnv).
package main

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() {
	switch os.Getenv("GRAY_FAULTY_MODE") {
	case "garbage":
		fmt.Fprintln(os.Stderr, "faulty: about to print garbage")
		fmt.Println("this is not a handshake line")
		os.Exit(1)
	case "version":
		// A plugin built against a future protocol version.
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: plugin.HandshakeConfig{
				ProtocolVersion:  99,
				MagicCookieKey:   "GRAY_PLUGIN_MAGIC_COOKIE",
				MagicCookieValue: "7d3c2f0e-gray-plugins-v1",
			},
			GRPCServer: plugin.DefaultGRPCServer,
		})
		return
	case "silent":
		fmt.Fprintln(os.Stderr, "faulty: hanging before the handshake")
		time.Sleep(time.Hour)
	}
	sdk.ServeEnv("Faulty", newEnv)
}

type env struct {
	cfg   envs.Config
	steps int
}

// newEnv understands: crash_after (exit the process at that step),
// hang_after (sleep at that step), step_error_after, nan_after,
// bad_obs_after (an observation outside the space), wrong_size (observations
// of the wrong length from the start), hang_on_close (Close never returns).
func newEnv(cfg envs.Config) (envs.Env, error) { return &env{cfg: cfg}, nil }

func (e *env) at(key string) bool {
	v, ok := e.cfg[key].(float64)
	return ok && int(v) == e.steps
}

func (e *env) ObservationSpace() envs.Space { return envs.NewBox(-1, 1, 2) }
func (e *env) ActionSpace() envs.Space      { return envs.Discrete{N: 2} }

func (e *env) obs() []float64 {
	if _, ok := e.cfg["wrong_size"]; ok {
		return []float64{0, 0, 0}
	}
	return []float64{0, float64(e.steps%10) / 10}
}

func (e *env) Reset(int64) ([]float64, error) { e.steps = 0; return e.obs(), nil }

func (e *env) Step([]float64) (envs.Step, error) {
	e.steps++
	switch {
	case e.at("crash_after"):
		fmt.Fprintln(os.Stderr, "faulty: crashing on purpose")
		os.Exit(7)
	case e.at("hang_after"):
		time.Sleep(time.Hour)
	case e.at("step_error_after"):
		return envs.Step{}, fmt.Errorf("the wheels came off at step %d", e.steps)
	case e.at("nan_after"):
		return envs.Step{Obs: e.obs(), Reward: math.NaN()}, nil
	case e.at("bad_obs_after"):
		return envs.Step{Obs: []float64{5, 0}, Reward: 1}, nil
	}
	return envs.Step{Obs: e.obs(), Reward: 1, Truncated: e.steps%20 == 0}, nil
}

func (e *env) Close() error {
	if _, ok := e.cfg["hang_on_close"]; ok {
		time.Sleep(time.Hour)
	}
	return nil
}
