package es

import (
	"testing"

	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// TestMain serves worker actors when the test binary runs as a gray
// worker, and starts the runtime (4 CPUs) for the tests with workers.
func TestMain(m *testing.M) { agenttest.Main(m, 4) }

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("ES", DefaultConfig, New)

// newAgent is an agent on env with the config keys and seed, stopped when
// the test ends.
var newAgent = agenttest.Maker(newFromKeys)
