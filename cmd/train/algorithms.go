package main

// The algorithms train offers register themselves (rllib.Register) in their
// packages' init functions; importing a package is what makes its
// algorithm known to --alg. Environments register in package envs, and
// plugins (plugin:<path>, ~/.gray/plugins) through package plugins.
import (
	_ "github.com/gray-ml/gray/rllib/a3c"
	_ "github.com/gray-ml/gray/rllib/dqn"
	_ "github.com/gray-ml/gray/rllib/es"
	_ "github.com/gray-ml/gray/rllib/ppo"
)
