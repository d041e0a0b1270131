// Package graytest holds what the test packages that start gray sessions
// share: the root package's API tests, runtime/driver's end-to-end tests,
// and the TestMain of test packages that keep one session for all their
// tests (the examples', the algorithms').
package graytest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// Start starts a session for the test (2 CPUs unless opts say otherwise,
// no GPUs unless it asks for some) and shuts it down when the test ends.
// The context it returns ends a minute after the start.
func Start(t *testing.T, opts gray.Options) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	if opts.NumCPUs == 0 {
		// A fixed size, not the machine's: the tests count on what a
		// session of 2 CPUs runs at once, on any machine.
		opts.NumCPUs = 2
	}
	opts.NoGPUs = opts.NoGPUs || opts.NumGPUs == 0
	if err := gray.Init(ctx, opts); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := gray.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return ctx
}

// Main is a test binary's TestMain for tests that share one session: when
// the binary runs as a gray worker it serves the package's tasks and
// actors; otherwise it starts a session with opts, runs the tests and shuts
// the session down.
func Main(m *testing.M, opts gray.Options) {
	gray.ServeIfWorker()
	if err := gray.Init(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = gray.Shutdown()
	os.Exit(code)
}
