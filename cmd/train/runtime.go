package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/plugins"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
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
type clusterFlags struct {
	address, token, tokenFile string
	resolved                  bool // check ran: address and token are final
}

// check resolves the cluster the flags (or GRAY_ADDRESS and GRAY_TOKEN)
// name and makes sure its Redis answers at its address and takes the
// token, before a run folder is made: a typo or a wrong token fails at
// once, saying what to fix, and leaves nothing behind.
func (cl *clusterFlags) check(ctx context.Context, stderr io.Writer) error {
	tok, err := session.TokenFromFlags(cl.token, cl.tokenFile, stderr)
	if err != nil {
		return fmt.Errorf("the cluster to run on: %w", err)
	}
	addr, tok, err := session.Resolve(cl.address, tok)
	if err != nil {
		return fmt.Errorf("the cluster to run on (--address, --token): %w", err)
	}
	if addr != "" {
		if err := reachable(ctx, addr); err != nil {
			return err
		}
		// A refused token fails here too, before anything is written.
		c, err := control.DialRedis(ctx, control.RedisConfig{Addr: addr, Password: tok}, "")
		if err != nil {
			return fmt.Errorf("the cluster to run on (--address, --token-file): %w", err)
		}
		c.Close()
	}
	cl.address, cl.token, cl.resolved = addr, tok, true
	return nil
}

// startRuntime starts the runtime (worker processes, object store) that
// agents create their rollout actors on, with the workers' output in
// logDir (the run folder's logs/), and returns the function that shuts it
// down. With a cluster (--address or GRAY_ADDRESS) the runtime leases the
// cluster's nodes, so rollout workers run across them.
func startRuntime(ctx context.Context, numCPUs int, logDir string, cl clusterFlags) (shutdown func(), err error) {
	if !cl.resolved {
		if err := cl.check(ctx, io.Discard); err != nil {
			return nil, err
		}
	}
	if err := gray.Init(ctx, gray.Options{NumCPUs: numCPUs, LogDir: logDir, Address: cl.address, Token: cl.token}); err != nil {
		return nil, err
	}
	return func() {
		if err := gray.Shutdown(); err != nil {
			fmt.Fprintf(os.Stderr, "train: shutting the runtime down: %v\n", err)
		}
	}, nil
}

// dialTimeout bounds the first connection to a cluster's address, so that
// an address nothing answers at fails in seconds rather than at the
// system's TCP timeout.
const dialTimeout = 10 * time.Second

// reachable checks that something listens at the cluster address addr,
// and says what to check when nothing does.
func reachable(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--address %q is not IP:PORT (the address `gray start --head` printed, or \"auto\" on the head's machine): %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot reach the Gray cluster at %s: %w\n"+
			"is its head running (`gray start --head` on that machine; `gray status --address %s` checks) and its port open from here?", addr, err, addr)
	}
	return c.Close()
}
