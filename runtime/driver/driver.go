// Package driver is the runtime of a driver process: the node that
// schedules its tasks on worker processes (runtime/node) with its
// shared-memory object store, and, on a cluster, the job's record and load
// in the control store (Redis), its tasks, actors and failures recorded
// there off the task path (a control.Recorder, cluster_state.go), its
// leases on the other nodes
// (runtime/cluster's Driver) and the goroutine that publishes its load for
// `gray status`.
//
// gray.Init builds a Config from its Options and calls Start; the session
// then talks to the Driver through the API's backend interface and shows
// it to tools through gray.Inspect. Nothing else starts one.
package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/machine"
	"github.com/gray-ml/gray/runtime/node"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// Config is what gray.Init's Options ask of a driver; the fields mean what
// the Options fields of the same names say.
type Config struct {
	// NumCPUs and NumGPUs: 0 means this machine's (on a cluster, those of
	// the node on this machine); NoGPUs forces no GPUs.
	NumCPUs, NumGPUs int
	NoGPUs           bool
	// Resources are custom resources; nil on a cluster means the node's.
	Resources  map[string]float64
	NumWorkers int // 0: NumCPUs
	Seed       int64
	Seeded     bool
	LogDir     string
	// ObjectStoreMemory and ObjectStoreDir size and place the
	// shared-memory object store ("": /dev/shm).
	ObjectStoreMemory int64
	ObjectStoreDir    string
	NoTimeline        bool
	// Address and Token name a cluster ("" and $GRAY_ADDRESS unset: none).
	Address, Token string
	// Args are passed to every worker process started from this
	// executable.
	Args []string
	// OnError is called with each task failure, outside the node's lock.
	OnError func(*task.TaskError)
}

// Driver is a running driver: its node, whose methods it has, and its
// cluster connection, if any.
type Driver struct {
	*node.Node
	cluster *clusterConn // nil on one machine
}

// Start opens the object store, connects to the cluster the Config names
// (if any) and starts the node.
func Start(ctx context.Context, c Config) (*Driver, error) {
	cpus := c.NumCPUs
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	gpus := c.NumGPUs
	switch {
	case c.NoGPUs:
		gpus = 0
	case gpus == 0:
		var err error
		if gpus, err = machine.DetectGPUsWhy(); err != nil {
			// A broken driver install must neither stop the session nor
			// pass unseen: it runs without GPUs and says so once.
			fmt.Fprintf(os.Stderr, "gray: %v; this session offers no GPU (gray.Options.NumGPUs sets them without detection)\n", err)
		}
	}
	cfg := node.Config{
		Resources:  task.Resources{CPU: float64(cpus), GPU: float64(gpus), Custom: c.Resources},
		NumWorkers: c.NumWorkers,
		Seed:       c.Seed,
		Seeded:     c.Seeded,
		LogDir:     c.LogDir,
		OnError:    c.OnError,
		Args:       c.Args,
	}
	if !c.NoTimeline {
		cfg.Events = events.New(0)
	}
	if cfg.NumWorkers == 0 {
		cfg.NumWorkers = cpus
	}
	store, err := openStore(c)
	if err != nil {
		return nil, err
	}
	cfg.Shared = store
	cl, err := dialCluster(ctx, c, &cfg)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		_ = store.Close()
		if cl != nil {
			cl.close()
		}
		return nil, err
	}
	if cl != nil {
		if err := cl.start(ctx, n); err != nil {
			_ = n.Shutdown()
			cl.close()
			return nil, err
		}
	}
	return &Driver{Node: n, cluster: cl}, nil
}

// Shutdown stops the node and its workers, then ends the cluster
// connection: the leases, the publisher and the job's record.
func (d *Driver) Shutdown() error {
	err := d.Node.Shutdown()
	if d.cluster != nil {
		d.cluster.close()
	}
	return err
}

// OnCluster reports whether the driver is connected to a cluster.
func (d *Driver) OnCluster() bool { return d.cluster != nil }

// Self names the cluster node on the driver's machine, which the driver's
// own node schedules; "" on one machine, or when no node of the cluster
// runs here.
func (d *Driver) Self() string {
	if d.cluster == nil {
		return ""
	}
	return d.cluster.self
}

// openStore opens the session's shared-memory object store, first removing
// the folders of drivers that died without Shutdown.
func openStore(c Config) (*objstore.Store, error) {
	root := c.ObjectStoreDir
	if root == "" {
		root = "/dev/shm"
	}
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("gray: Init: object store folder: %w (set Options.ObjectStoreDir to a tmpfs folder that exists)", err)
	}
	_, _ = objstore.CleanStale(root) // best effort: a folder we cannot remove is not ours to worry about
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir := filepath.Join(root, fmt.Sprintf("gray-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	st, err := objstore.Open(objstore.Options{Dir: dir, Capacity: c.ObjectStoreMemory})
	if err != nil {
		return nil, fmt.Errorf("gray: Init: %w", err)
	}
	return st, nil
}
