// Command cartpole-plugin serves the built-in CartPole-v1 as an environment
// plugin, for a like-for-like comparison of plugin and in-process stepping.
package main

import (
	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() {
	sdk.ServeEnv("CartPole", func(cfg envs.Config) (envs.Env, error) { return envs.Make("CartPole-v1", cfg) })
}
