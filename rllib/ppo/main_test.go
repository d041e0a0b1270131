package ppo

import (
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// TestMain serves rollout worker actors when the test binary runs as a gray
// worker, and starts the runtime for the tests with num_workers > 0. The
// runtime declares one GPU, so num_gpus tests can place the learner actor
// (with the CPU learner standing in where the machine has no GPU).
func TestMain(m *testing.M) { agenttest.MainWith(m, gray.Options{NumCPUs: 4, NumGPUs: 1}) }

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("PPO", DefaultConfig, New)

// newAgent is an agent on env with the config keys and seed, stopped when
// the test ends.
var newAgent = agenttest.Maker(newFromKeys)
