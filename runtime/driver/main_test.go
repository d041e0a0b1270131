package driver_test

// The end-to-end tests of the driver's runtime: they start sessions with
// gray.Init (one machine, or a cluster of real daemons and a real
// redis-server, internal/clustertest) and check what the node, its store
// and the cluster did, through gray.Inspect. The API's own tests are in
// the root package.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/internal/graytest"
	"github.com/gray-ml/gray/runtime/driver"
	"github.com/gray-ml/gray/runtime/state"
)

// TestMain serves tasks when this test binary runs as a gray worker; the
// driver-side tests run otherwise.
func TestMain(m *testing.M) {
	gray.ServeIfWorker()
	os.Exit(m.Run())
}

// Counter is the state of the tests' counting actors.
type Counter struct{ value int }

// start starts a session for the test, ended with it.
func start(t *testing.T, opts gray.Options) context.Context { return graytest.Start(t, opts) }

// theDriver returns the running session's driver, as gray.Inspect shows it.
func theDriver(t testing.TB) *driver.Driver {
	t.Helper()
	i, err := gray.Inspect()
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	return i.(*driver.Driver)
}

// A gate is a file a test creates to let the tasks waiting on it go on,
// so that a test orders events by what happened, not by guessed timings.
type gate string

func newGate(t *testing.T, name string) gate { return gate(filepath.Join(t.TempDir(), name)) }

// open lets the waiting tasks go on.
func (g gate) open(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(string(g), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait, in a task, returns once the gate is open or ctx ends.
func (g gate) wait(ctx context.Context) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(string(g)); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for gate %s: %w", g, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitSnapshot waits until the driver's scheduler state satisfies ok.
func waitSnapshot(t *testing.T, what string, ok func(state.Snapshot) bool) {
	t.Helper()
	clustertest.WaitFor(t, 30*time.Second, what, func() bool {
		s, err := gray.Snapshot()
		return err == nil && ok(s)
	})
}

// taskIn returns the state of the task whose first return is r in s ("" if
// it is not there).
func taskIn(s state.Snapshot, r gray.AnyRef) string {
	for _, ts := range s.Tasks {
		if ts.ID == r.ID().Task() {
			return ts.State
		}
	}
	return ""
}
