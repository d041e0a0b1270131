package a3c

import (
	"testing"

	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// testCPUs is the runtime's CPU count in these tests; each runner reserves
// one.
const testCPUs = 4

// TestMain serves runner actors when the test binary runs as a gray worker,
// and starts the runtime for the tests.
func TestMain(m *testing.M) { agenttest.Main(m, testCPUs) }

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("A3C", DefaultConfig, New)
