// Package node is the runtime of one machine as the driver runs it: a
// shell around cores with no I/O. It turns workers' messages and the
// driver's calls into events for the scheduling core (runtime/sched) and
// its objects part (runtime/objects, which keeps the object store's index,
// the object table of runtime/objtable and the recovery core of
// runtime/recovery, and on a cluster moves objects between nodes) and the
// actors' driver (runtime/actors: the actors, their queues and restarts), and their
// effects into messages and worker processes. Get and Wait requests are runtime/requests' (the
// matching is sched.Waits'). The workers'
// processes and connections are runtime/pool's: it starts them, serves
// their connections (calling the node's handler for each message, under
// the node's lock) and writes what the node queued once the lock is
// released. The node keeps the state a cluster shares behind
// control.Store.
//
// The files: node.go (the Node, Start, Shutdown), submit.go (tasks and
// actor calls going out, the scheduling core's effects, where tasks
// start; runtime/tasktime times them to pack short ones), procs.go (what the pool reports: a worker's start,
// hello, messages and end, and a task's result), requests.go (Get and
// Wait handed to runtime/requests, the node's answers about its workers,
// and which worker's connection a waiting Get reads itself),
// objects.go (the glue to runtime/objects: the events the node feeds it,
// the tasks and effects it hands back; the API's object calls are
// objects.API's, embedded in the Node), direct.go (direct actor calls'
// addresses and leases for nested tasks: runtime/direct decides), accounts.go and
// grants.go (resources, a cluster node's grant), resubmit.go
// (calls made again by a replay: runtime/resubmit decides), actors.go
// (what runtime/actors, which keeps the actors and drives their queues
// and restarts, has the node do: actors.Host), remote.go (a
// cluster's nodes), snapshot.go (the state for inspection, a
// runtime/state Snapshot), and backend.go (the API the root package calls).
// runtime/README.md describes the threads, the locks and the route of a
// task.
package node

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/actors"
	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/requests"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/tasktime"
)

// Config configures a Node.
type Config struct {
	Resources  task.Resources // what the node has
	NumWorkers int            // workers started at once and kept alive; 0: ceil(CPUs), at least 1
	Seed       int64          // with Seeded, task and object IDs repeat from run to run
	Seeded     bool
	LogDir     string    // "": worker output to Output, prefixed; else files worker-N.out/.err there
	Output     io.Writer // where prefixed worker output goes; nil: os.Stdout
	// Executable and Args start a worker: the program itself by default.
	Executable string
	Args       []string
	Env        []string // added to local workers' environment
	// OnError is called once for every failed task, outside the node's lock.
	OnError func(*task.TaskError)
	Control control.Store // nil: a control.Mem
	// Starts, when not nil, is told where each task runs as it is sent
	// to a worker (a cluster driver's control.Recorder, for `gray list`);
	// nil costs the send path one nil check.
	Starts control.TaskStarts
	Store  objects.Store // nil: an objects.MemStore
	// Shared is the node's shared-memory object store, owned (and closed at
	// Shutdown) by the node; nil keeps every object inline in the driver.
	Shared *objstore.Store
	// Events, when not nil, records when each task ran on which worker.
	Events *events.Recorder
	// Cluster, when not nil, lets tasks and actors run on other nodes of a
	// cluster (see remote.go).
	Cluster *cluster.DriverNode
	// Checkpoints keeps actors' checkpoints (see runtime/actors); nil: a
	// control.MemCheckpoints.
	Checkpoints control.Checkpoints

	// startWorker, when not nil, replaces starting a local worker's
	// process (tests play workers with it): it runs on a goroutine of its
	// own with the node's socket and the worker's number, connects and says
	// hello as a worker would, and returns once the worker has ended, with
	// how it ended (nil: it exited).
	startWorker func(socket string, id int) error
}

// ErrShutdown is returned by calls on a node that was shut down.
var ErrShutdown = objects.ErrShutdown

// Node is the driver's runtime for one machine.
type Node struct {
	cfg    Config
	ctrl   control.Store
	starts control.TaskStarts // Config.Starts
	root   ids.TaskID
	count  atomic.Uint64 // tasks submitted by the driver
	puts   atomic.Uint64 // objects put by the driver
	done   chan struct{} // closed by Shutdown

	mu       sync.Mutex
	closed   bool
	store    objects.Store
	waits    *sched.Waits[*request]   // Gets and Waits waiting for objects (sched.Waits)
	reqs     *requests.Table[*proc]   // what Gets and Waits are and how they are answered (requests.go)
	objs     *objtable.Table          // who holds which object and why (runtime/objtable)
	core     *sched.Cluster[*pending] // resources, queues and the pools' decisions, per node
	workers  map[sched.WorkerID]*proc
	errQ     []*task.TaskError            // failures to report outside the lock
	spawnErr *recovery.NoWorkers          // set when workers cannot start at all
	gone     *recovery.TaskLost[*pending] // how the worker or node whose end is being stepped lost its tasks
	quiet    bool                         // failures being stored are intended (gray.Kill): do not report them

	shared *objstore.Store // nil: no shared memory, every object inline
	// rec decides what is rebuilt, run again or given up when something
	// is lost (runtime/recovery).
	rec *recovery.Core[*pending]
	// acts keeps the node's actors and carries out what their queues and
	// the restart core decide (runtime/actors; the node's side in
	// actors.go).
	acts *actors.Driver[*pending, *actor]
	// ob keeps the objects: their lifetimes, rebuilds and copies on other
	// nodes (runtime/objects, glue in objects.go). store, shared, objs and
	// rec are its parts, which the shell reads.
	ob *objects.Keeper[*pending]
	// The API's object calls (Put, Free, Drop...: objects.API) are the
	// node's, each taking mu.
	*objects.API[*pending]

	remote *remoteState // nil outside a cluster
	direct *directTable // leases, direct calls' addresses, promises (direct.go)

	// lastExec is the local worker the last task or actor call was sent
	// to: a Get of its result reads the answer itself (helpFor).
	lastExec *proc
	// timer times function tasks on their workers, to pack short ones
	// onto few workers (runtime/tasktime).
	timer *tasktime.Timer[*task.Entry]

	pool *pool.Pool     // the workers' processes and connections
	wg   sync.WaitGroup // the node's own goroutines (the pool's are its own)
}

// pending is a submitted task that has not finished.
type pending struct {
	spec  *task.Spec
	entry *task.Entry
	actor *actor
	args  objects.ArgWait // its wait for its arguments (the Keeper's, objects/args.go)
	// record is a function task as submitted (reference arguments
	// intact) on a node with a shared store: its lineage (often spec
	// itself). The calls of an actor that may be restarted are recorded
	// by the restart core (runtime/actors drives it).
	record *task.Spec
	sent   int64 // when it was handed to a worker, in the timer's clock (Config.Events' when set)
	// For calls of an actor that may be restarted: whether it is sent
	// again after a restart; whether its results were stored already (a
	// replay).
	again   bool
	discard bool
	// lineageHeld: the task holds Lineage claims on its reference
	// arguments until it ends (objects/lineage.go).
	lineageHeld bool
}

// Args implements objects.Task.
func (p *pending) Args() *objects.ArgWait { return &p.args }

// lineage returns the record of function task p for lineage, or nil.
func (p *pending) lineage() *task.Spec {
	if p.spec.Kind != task.KindFunc {
		return nil
	}
	return p.record
}

// proc is a worker: its connection and process (pool.Worker) and what the
// node decides about it.
type proc struct {
	*pool.Worker
	id       sched.WorkerID
	name     string
	actor    *actor
	dead     bool
	node     sched.NodeID // where it runs: sched.Local, or a node of the cluster
	lastDone int64        // when its last function task's result came, in the timer's clock
}

// actor is one actor and its dedicated worker.
type actor struct {
	id   ids.ActorID
	typ  string
	res  task.Resources
	gpus []int
	w    *proc
	// Actor is its call queue: the calls not yet sent and those sent,
	// whether it is dead, released (no handle remains), killed or
	// restartable (its type allows restarts, so the restart core logs its
	// calls: runtime/actors). Its effects are carried out by runtime/actors.
	actorq.Actor[*pending]
}

// Start starts a node: its socket, its control and object stores and its
// pool of workers. It returns once the pool's workers have connected, or
// with ctx's error.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Resources.Check(); err != nil {
		return nil, fmt.Errorf("gray: %w", err)
	}
	if cfg.NumWorkers <= 0 {
		cfg.NumWorkers = max(1, int(math.Ceil(cfg.Resources.CPU)))
	}
	if cfg.Control == nil {
		cfg.Control = control.NewMem()
	}
	if cfg.Store == nil {
		cfg.Store = objects.NewMemStore()
	}
	if cfg.Checkpoints == nil {
		cfg.Checkpoints = control.NewMemCheckpoints()
	}
	n := &Node{
		cfg:     cfg,
		timer:   tasktime.New[*task.Entry](cfg.Events),
		ctrl:    cfg.Control,
		starts:  cfg.Starts,
		root:    ids.Root(cfg.Seed, cfg.Seeded),
		done:    make(chan struct{}),
		store:   cfg.Store,
		objs:    objtable.New(),
		core:    sched.NewCluster[*pending](sched.Config{Total: cfg.Resources, Workers: cfg.NumWorkers, Capacity: cfg.Cluster.Capacity(cfg.Resources), GPUs: cfg.Cluster.GPUs(), PackWorkers: tasktime.PackWorkers()}),
		workers: map[sched.WorkerID]*proc{},

		shared: cfg.Shared,
		rec:    recovery.New[*pending](recovery.Limits{Cluster: cfg.Cluster != nil}),
	}
	n.waits = sched.NewWaits[*request](n.core.Lender())
	n.ob = objects.New(objects.Config[*pending]{Store: n.store, Shared: n.shared, Table: n.objs, Rec: n.rec,
		Tasks: objectTasks{n}, Lock: n.mu.Lock, Unlock: n.unlock})
	n.API = n.ob.API()
	n.acts = actors.New[*pending, *actor](actorHost{n}, n.ob, n.ctrl, restart.New(restart.Config{Cluster: cfg.Cluster != nil, NodeLoss: recovery.DefaultRuns}), cfg.Checkpoints)
	n.direct = newDirect(n.ob)
	n.reqs = requests.New(requests.Config[*proc]{Waits: n.waits, Objects: n.ob, Store: n.store, Workers: askers{n},
		Lock: n.mu.Lock, Unlock: n.unlock, Step: n.step, Done: n.done})
	env := cfg.Env
	if cfg.Cluster != nil {
		// Local workers too dial other nodes (pulling objects, direct
		// calls), with the cluster's token.
		env = append(slices.Clip(env), task.EnvToken+"="+hex.EncodeToString(cfg.Cluster.Token))
		env = append(env, directHostEnv(cfg.Cluster)...) // callers on other nodes (direct.go)
	}
	pc := pool.Config{Lock: &n.mu, Executable: cfg.Executable, Args: cfg.Args, Env: env,
		LogDir: cfg.LogDir, Output: cfg.Output, Play: cfg.startWorker}
	if cfg.Shared != nil {
		pc.StoreDir, pc.StoreCap = cfg.Shared.Dir(), cfg.Shared.Capacity()
	}
	p, err := pool.New(pc, (*poolHandler)(n))
	if err != nil {
		return nil, err
	}
	n.pool = p
	if cfg.Cluster != nil {
		if err := n.listenTCP(); err != nil {
			_ = p.Close(nil)
			return nil, err
		}
	}
	n.mu.Lock()
	n.core.Step(sched.Booted{})
	n.step()
	n.unlock()
	// Wait for the pool so the first tasks find workers ready.
	for {
		n.mu.Lock()
		s, serr := n.core.Starting(), n.spawnErr
		n.unlock()
		if serr != nil {
			n.Shutdown()
			return nil, serr
		}
		if s == 0 {
			return n, nil
		}
		select {
		case <-ctx.Done():
			n.Shutdown()
			return nil, fmt.Errorf("gray: waiting for workers to start: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// Total returns the node's resources (on a cluster, every node's, not
// only what this job's grants hold now).
func (n *Node) Total() task.Resources {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Capacity()
}

// Available returns the resources this job does not use now.
func (n *Node) Available() task.Resources {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Unused()
}

// Actor returns the control store's record of actor id.
func (n *Node) Actor(id ids.ActorID) (control.ActorRecord, bool) { return n.ctrl.Actor(id) }

// Errors returns every task failure seen so far, from the control store's
// error log.
func (n *Node) Errors() []*task.TaskError { return n.ctrl.Errors() }

// NewTaskID returns the ID for the next task the driver submits.
func (n *Node) NewTaskID() ids.TaskID { return ids.Child(n.root, n.count.Add(1)) }

// NewPutID returns the ID for the next object the driver puts.
func (n *Node) NewPutID() ids.ObjectID { return ids.Put(n.root, n.puts.Add(1)) }

// WorkerName names the driver in error messages.
func (n *Node) WorkerName() string { return fmt.Sprintf("driver (pid %d)", os.Getpid()) }

// Shutdown stops every worker and frees the node. Calls waiting in Get or
// Wait return ErrShutdown.
func (n *Node) Shutdown() error {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil
	}
	n.closed = true
	n.ob.Shut()
	n.core.Step(sched.Closed{})
	close(n.done)
	ws := make([]*pool.Worker, 0, len(n.workers))
	for _, w := range n.workers {
		ws = append(ws, w.Worker)
	}
	n.unlock()
	n.ob.Close()
	perr := n.pool.Close(ws)
	n.wg.Wait()
	var serr error
	if n.shared != nil {
		serr = n.shared.Close()
	}
	return errors.Join(perr, serr)
}
