package main

// The algorithms train offers register themselves (rllib.Register) in their
// packages' init functions; importing a package is what makes its
// algorithm known to --alg. Environments register in package envs, and
// plugins (plugin:<path>, ~/.gray/plugins) through package plugins.
//
// TODO(ppo): add `_ "github.com/gray-ml/gray/rllib/ppo"` to the imports
// below once rllib/ppo is on main (and the other algorithms as they land).
import (
	_ "github.com/gray-ml/gray/envs"
)
