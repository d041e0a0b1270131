package a3c

import (
	"github.com/gray-ml/gray/rllib/internal/agenttest"

	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// testCPUs is the runtime's CPU count in these tests; each runner reserves
// one.
const testCPUs = 4

// TestMain serves runner actors when the test binary runs as a gray worker,
// and starts the runtime for the tests.
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: testCPUs}); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = gray.Shutdown()
	os.Exit(code)
}

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("A3C", DefaultConfig, New)
