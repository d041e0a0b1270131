package tune

import (
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves gray tasks when this test binary runs as a gray worker
// (the actor trials of TestTrialsAsGrayActors).
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}
