// Package gray is a distributed task and actor runtime for Go: remote
// functions that return futures (typed references), an object store of
// immutable values, and actors, all scheduled by resources (CPUs, GPUs,
// custom) over a pool of worker processes.
//
// A program registers remote functions and actor types at package level,
// calls ServeIfWorker first thing in main (or TestMain), then Init:
//
//	var add = gray.Func2("add", func(ctx context.Context, a, b int) (int, error) { return a + b, nil })
//
//	func main() {
//		gray.ServeIfWorker()
//		ctx := context.Background()
//		if err := gray.Init(ctx, gray.Options{}); err != nil { log.Fatal(err) }
//		defer gray.Shutdown()
//		sum, err := gray.Get(ctx, add.Remote(1, add.Remote(2, 3)))
//	}
//
// Workers are the program's own executable started again in worker mode;
// because registration happens at package level, the driver and every
// worker agree on every name. A test package that starts gray needs a
// TestMain that serves first, so that its test binary can be a worker:
//
//	func TestMain(m *testing.M) {
//		gray.ServeIfWorker()
//		os.Exit(m.Run())
//	}
//
// A worker exits when its connection to the driver closes, and on Linux
// the kernel kills it if the driver dies (even by SIGKILL), so workers
// never outlive their driver.
//
// Objects of codec.InlineThreshold (100 KiB) or more live in the node's
// shared-memory object store (runtime/objstore; files under /dev/shm or
// Options.ObjectStoreDir), are mapped read-only by every process that
// reads them and decoded without a copy (see Get for the read-only rule);
// smaller ones stay in the driver's memory. An object is freed once no
// process holds a Ref to it and no queued or running task needs it, or at
// once when the program calls Free. A Ref encoded into a value (a struct
// field, a slice or map of Refs) counts too: an object whose value names
// others keeps them until it is freed itself, a task argument naming them
// keeps them until the task ends, and a process that decodes such a Ref
// holds its object like any Ref it made (in local mode an encoded Ref's
// object is kept for the session). When the store is full, unpinned objects are
// evicted least recently used first; a remote function's result is then
// rebuilt from lineage on the next Get.
//
// Actors get private copies of large arguments, so what they keep never
// changes under them. An actor that keeps a large object for its lifetime
// (a noise table, a dataset) declares the parameter as Shared[T] instead:
// every actor then reads the one copy in shared memory, held until the
// actors holding it end. ActorType.RemoteWith gives one actor its own
// resources (ActorOptions), as Ray's .options() does.
//
// An actor type registered with MaxRestarts survives the death of its
// process: it is recreated and its calls replayed in order, from its last
// checkpoint if it implements Checkpointer and sets CheckpointInterval.
// By default a dead actor stays dead (ErrActorDead). An object that can
// neither be found nor rebuilt fails with ErrObjectLost and the reason.
//
// Errors: a failed task's references hold a *TaskError. Errors cross
// processes as text, except that every registered sentinel error keeps its
// identity: errors.Is(err, ErrActorDead) or errors.Is(err,
// objstore.ErrReadOnly) is true in the driver for an error made in a
// worker. Gray's exported sentinels are registered; register a program's
// own with RegisterError, whose documentation gives the full rule.
//
// This package is the API only. Where the rest lives: runtime/driver is the
// driver's runtime that Init starts (the node, its object store, the
// cluster connection); runtime/worker serves tasks in worker processes;
// runtime/local is LocalMode; runtime/README.md walks a task from Remote to
// its result through them. backend.go is everything the API asks of them.
// The runtime's end-to-end tests (the store, object lifetimes, rebuilds,
// clusters, chaos) are runtime/driver's; this package's tests check the
// API's behaviour.
package gray

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gray-ml/gray/runtime/driver"
	"github.com/gray-ml/gray/runtime/local"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/worker"
)

// Options for Init. The zero value is a sensible default for one machine.
type Options struct {
	// NumCPUs is the number of CPUs the scheduler hands out; 0 means the
	// machine's logical CPUs.
	NumCPUs int
	// NumGPUs is the number of GPUs; 0 means detect them with NVML (none
	// found: 0). Use NoGPUs to force zero on a machine that has some.
	NumGPUs int
	NoGPUs  bool
	// Resources are custom resources, by name.
	Resources map[string]float64
	// NumWorkers is the size of the worker pool kept alive; 0 means NumCPUs.
	NumWorkers int
	// Seed makes object and task IDs deterministic when Seeded is set.
	Seed   int64
	Seeded bool
	// LogDir: "" sends worker output to the driver's standard output, each
	// line prefixed "(worker N) "; otherwise each worker writes
	// worker-N.out and worker-N.err in that folder.
	LogDir string
	// LocalMode runs every task serially in the driver, for debugging.
	LocalMode bool
	// ObjectStoreMemory is the shared-memory object store's capacity in
	// bytes; 0 means 30% of the memory available at Init (capped by the
	// file system's free space).
	ObjectStoreMemory int64
	// ObjectStoreDir is where the store keeps its objects (Ray 0.2's
	// plasma_directory), a tmpfs for speed; "" means /dev/shm. Each session
	// uses a gray-<pid>-<random> folder in it, removed at Shutdown; folders
	// of drivers that died are removed by the next Init.
	ObjectStoreDir string
	// NoTimeline turns off the recording of task events that Timeline
	// returns (a few hundred nanoseconds per task).
	NoTimeline bool
	// Address connects the program to a cluster (see docs/cluster.md): the
	// address IP:PORT that `gray start --head` printed, or "auto" for the
	// cluster whose head runs on this machine. "" means $GRAY_ADDRESS, and
	// when that is unset too, no cluster: everything runs on this machine,
	// with no server. Tasks run on this machine while its resources allow
	// and spill to the cluster's other nodes when they do not.
	Address string
	// Token is the cluster's token; "" means $GRAY_TOKEN, or the token of
	// the cluster's session on this machine.
	Token string
}

// session is one Init..Shutdown span. References remember their session so
// one used after Shutdown, or in another session, is a clear error.
type session struct {
	b backend
	capabilities
	cluster bool // the driver is connected to a cluster
	closed  atomic.Bool
	refs    refRuns // records of task results' references (refblock.go)
}

// The process's session: gray's API is package-level, like Ray 0.2's, so
// the runtime a process talks to is process-wide state. last keeps the
// ended session's error log readable after Shutdown.
var (
	current atomic.Pointer[session]
	last    atomic.Pointer[session]
	initMu  sync.Mutex
)

// ServeIfWorker must be called first thing in main (and in TestMain of a
// test package that uses gray). In a worker process it serves tasks and
// exits, never returning; in the driver it returns at once.
func ServeIfWorker() {
	if !worker.Env() {
		return
	}
	// A Ctrl-C at the terminal reaches the whole process group: the driver
	// decides what happens (its Shutdown, or its death, ends the workers).
	signal.Ignore(os.Interrupt)
	w, err := worker.Connect()
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			os.Exit(0) // the driver shut down while this worker started
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := &session{b: w, capabilities: workerCaps(w)}
	current.Store(s)
	w.Serve()
}

// Init starts gray on this machine: a control store, a local scheduler, an
// object store and a pool of worker processes. In a worker process it
// serves tasks and never returns.
func Init(ctx context.Context, opts Options) error {
	ServeIfWorker()
	initMu.Lock()
	defer initMu.Unlock()
	if current.Load() != nil {
		return errors.New("gray: Init called twice: call gray.Shutdown before starting another session")
	}
	if opts.NumCPUs < 0 || opts.NumGPUs < 0 || opts.NumWorkers < 0 || opts.ObjectStoreMemory < 0 {
		return fmt.Errorf("gray: Init: NumCPUs (%d), NumGPUs (%d), NumWorkers (%d) and ObjectStoreMemory (%d) must not be negative", opts.NumCPUs, opts.NumGPUs, opts.NumWorkers, opts.ObjectStoreMemory)
	}
	if opts.LocalMode {
		l := local.New(local.Config{
			Resources: task.Resources{CPU: float64(opts.NumCPUs), GPU: float64(opts.NumGPUs), Custom: opts.Resources},
			Seed:      opts.Seed,
			Seeded:    opts.Seeded,
		})
		s := &session{b: l, capabilities: localCaps(l)}
		current.Store(s)
		last.Store(s)
		return nil
	}
	c := driver.Config{
		NumCPUs: opts.NumCPUs, NumGPUs: opts.NumGPUs, NoGPUs: opts.NoGPUs, Resources: opts.Resources,
		NumWorkers: opts.NumWorkers, Seed: opts.Seed, Seeded: opts.Seeded, LogDir: opts.LogDir,
		ObjectStoreMemory: opts.ObjectStoreMemory, ObjectStoreDir: opts.ObjectStoreDir, NoTimeline: opts.NoTimeline,
		Address: opts.Address, Token: opts.Token,
		OnError: func(e *task.TaskError) {
			fmt.Fprintf(os.Stderr, "gray: %v\n", e)
		},
	}
	if flag.Lookup("test.run") != nil {
		// A test binary: should ServeIfWorker be missing from TestMain, the
		// worker then runs no tests rather than the whole suite again.
		c.Args = []string{"-test.run=^$", "-test.bench=^$"}
	}
	d, err := driver.Start(ctx, c)
	if err != nil {
		return err
	}
	s := &session{b: d, capabilities: driverCaps(d), cluster: d.OnCluster()}
	current.Store(s)
	last.Store(s)
	return nil
}

// Shutdown stops every process Init started. References from the ended
// session return an error afterwards.
func Shutdown() error {
	initMu.Lock()
	defer initMu.Unlock()
	s := current.Load()
	if s == nil {
		return nil
	}
	if s.owner == nil {
		return errors.New("gray: Shutdown called inside a worker; only the driver may shut gray down")
	}
	current.Store(nil)
	s.closed.Store(true)
	return s.owner.Shutdown()
}

// IsInitialized reports whether Init has been called and Shutdown has not.
func IsInitialized() bool { return current.Load() != nil }

// OnCluster reports whether this program is a driver connected to a
// cluster (Options.Address or GRAY_ADDRESS), rather than running on this
// machine alone. False before Init, after Shutdown and inside tasks.
func OnCluster() bool {
	s := current.Load()
	return s != nil && s.cluster
}

// Errors returns the task failures seen so far in this session (or the
// last one, after Shutdown): the counterpart of ray.error_info.
func Errors() []*TaskError {
	s := current.Load()
	if s == nil {
		s = last.Load()
	}
	if s == nil || s.owner == nil {
		return nil // a worker: the driver keeps the error log
	}
	return s.owner.Errors()
}

// GPUIDs returns the IDs of the GPUs reserved for the task or actor whose
// context ctx is; nil outside a task or when it asked for none.
func GPUIDs(ctx context.Context) []int {
	i := task.InfoFrom(ctx)
	if i == nil || len(i.GPUIDs) == 0 {
		return nil
	}
	return append([]int(nil), i.GPUIDs...)
}

func sess() (*session, error) {
	s := current.Load()
	if s == nil {
		return nil, ErrNotInitialized
	}
	return s, nil
}

// ClusterResources returns the resources the runtime has in all, by name:
// "CPU", "GPU" and each custom resource. Use it to check a request against
// what exists (for example, that num_workers rollout workers of 1 CPU each
// fit) and say what to change. Nil before Init and inside tasks.
func ClusterResources() map[string]float64 {
	return resources(false)
}

// AvailableResources returns the resources not held by running tasks and
// live actors right now, by name, like ClusterResources.
func AvailableResources() map[string]float64 {
	return resources(true)
}

func resources(avail bool) map[string]float64 {
	s := current.Load()
	if s == nil || s.owner == nil {
		return nil // a worker: the driver keeps the node's accounts
	}
	r, free := s.owner.Resources()
	if avail {
		r = free
	}
	m := map[string]float64{"CPU": r.CPU, "GPU": r.GPU}
	for k, v := range r.Custom {
		m[k] = v
	}
	return m
}
