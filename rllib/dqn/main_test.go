package dqn

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves rollout worker actors when the test binary runs as a gray
// worker, and starts the runtime for the tests with num_workers > 0.
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
