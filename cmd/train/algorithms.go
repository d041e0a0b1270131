package main

// The algorithms `train --alg` offers register themselves when imported.
import (
	_ "github.com/gray-ml/gray/rllib/ppo"
)
