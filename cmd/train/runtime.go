package main

import "context"

// The runtime (package gray) must serve worker processes before anything
// else runs, and be initialised before agents create their rollout actors.
//
// TODO(runtime): package gray is not on main yet. When it lands:
//   - serveIfWorker: call gray.ServeIfWorker();
//   - startRuntime: call gray.Init(ctx, gray.Options{NumCPUs: numCPUs})
//     and return gray.Shutdown.
//
// These two functions are the only places cmd/train touches the runtime.

// serveIfWorker turns this process into a runtime worker when it was
// started as one; it returns at once in the driver.
func serveIfWorker() {}

// startRuntime starts the runtime for a training run and returns the
// function that shuts it down.
func startRuntime(ctx context.Context, numCPUs int) (shutdown func(), err error) {
	_, _ = ctx, numCPUs
	return func() {}, nil
}
