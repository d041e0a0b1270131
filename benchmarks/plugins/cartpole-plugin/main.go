// Command cartpole-plugin serves CartPole-v1 as an environment plugin, for a
// like-for-like comparison of plugin and in-process stepping.
package main

import (
	"github.com/gray-ml/gray/benchmarks/plugins/internal/cartpole"
	"github.com/gray-ml/gray/plugins/sdk"
)

func main() { sdk.ServeEnv("CartPole", cartpole.New) }
