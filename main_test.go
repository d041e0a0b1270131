package gray_test

import (
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves tasks when this test binary runs as a gray worker; the
// driver-side tests run otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("GRAY_TEST_NO_SERVE") == "" { // see TestMissingServeIfWorker
		gray.ServeIfWorker()
	}
	os.Exit(m.Run())
}
