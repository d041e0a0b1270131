package dashboard

import (
	"os"
	"testing"

	"github.com/gray-ml/gray"
)

// TestMain serves tasks when the binary runs as a gray worker (the
// timeline test starts a session), and removes the shared browser and
// fixture after the tests.
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	code := m.Run()
	if browserOnce.cancel != nil {
		browserOnce.cancel()
	}
	if fixtureOnce.dir != "" {
		os.RemoveAll(fixtureOnce.dir)
	}
	os.Exit(code)
}
