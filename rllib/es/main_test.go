package es

import (
	"github.com/gray-ml/gray/rllib/internal/agenttest"

	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves worker actors when the test binary runs as a gray
// worker, and starts the runtime (4 CPUs) for the tests with workers.
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 4}); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = gray.Shutdown()
	os.Exit(code)
}

// newFromKeys is New taking config keys, as train gives them.
var newFromKeys = agenttest.FromKeys("ES", DefaultConfig, New)
