package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/plugins"
)

// setup registers what every process of train (driver and workers alike)
// must agree on, then turns the process into a runtime worker when it was
// started as one. It must run before anything else in main.
func setup() {
	// Plugins in ~/.gray/plugins and ~/.gray/plugins.yaml become names
	// (--env GridWorld-v0); plugin:<path> names resolve without this.
	if err := plugins.RegisterDefaults(); err != nil {
		fmt.Fprintf(os.Stderr, "train: %v\n", err)
		os.Exit(exitError)
	}
	serveIfWorker()
}

// serveIfWorker turns this process into a runtime worker when the runtime
// started it as one (it then never returns); in the driver it returns at
// once. It must run before anything else in main.
//
// Workers ignore Ctrl-C: a terminal sends SIGINT to the whole process
// group, workers included, and the driver must still have its workers to
// finish the iteration, save the final checkpoint and shut them down. In
// the driver, signal.Notify (in main) undoes the Ignore.
func serveIfWorker() {
	signal.Ignore(os.Interrupt)
	gray.ServeIfWorker()
}

// clusterFlags are --address and --token: the cluster to run on (none: this
// machine only).
type clusterFlags struct{ address, token string }

// startRuntime starts the runtime (worker processes, object store) that
// agents create their rollout actors on, with the workers' output in
// logDir (the run folder's logs/), and returns the function that shuts it
// down.
func startRuntime(ctx context.Context, numCPUs int, logDir string, cl clusterFlags) (shutdown func(), err error) {
	if err := gray.Init(ctx, gray.Options{NumCPUs: numCPUs, LogDir: logDir, Address: cl.address, Token: cl.token}); err != nil {
		return nil, err
	}
	return func() {
		if err := gray.Shutdown(); err != nil {
			fmt.Fprintf(os.Stderr, "train: shutting the runtime down: %v\n", err)
		}
	}, nil
}
