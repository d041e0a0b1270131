package gray_test

import (
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves tasks when this test binary runs as a gray worker; the
// driver-side tests run otherwise.
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}
