package rllib

import (
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves tasks when the test binary runs as a gray worker
// (TestCheckWorkers starts a runtime).
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}
