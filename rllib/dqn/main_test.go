package dqn

import (
	"testing"

	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// TestMain serves rollout worker actors when the test binary runs as a gray
// worker, and starts the runtime for the tests with num_workers > 0.
func TestMain(m *testing.M) { agenttest.Main(m, 4) }

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("DQN", DefaultConfig, New)

// newAgent is an agent on env with the config keys and seed, stopped when
// the test ends.
var newAgent = agenttest.Maker(newFromKeys)
