// Package node is the runtime of one machine as the driver runs it: the
// local scheduler, the worker pool, the actors and the node's objects. It
// keeps its shared state behind ControlStore and its objects behind
// ObjectStore, so a cluster can put Redis and a shared-memory store behind
// the same scheduler.
//
// Scheduling has two seams: Submit is where a global scheduler would route a
// task to another node when this one cannot fit it (feasible reports whether
// a node could ever run it), and schedule is the node-local loop that
// matches ready tasks to free resources and idle workers.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
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
	// OnError is called once for every failed task, outside the node's lock.
	OnError func(*task.TaskError)
	Control ControlStore // nil: a MemControl
	Store   ObjectStore  // nil: a MemStore
	// Shared is the node's shared-memory object store, owned (and closed at
	// Shutdown) by the node; nil keeps every object inline in the driver.
	Shared *objstore.Store
	// Events, when not nil, records when each task ran on which worker.
	Events *events.Recorder
}

// ErrShutdown is returned by calls on a node that was shut down.
var ErrShutdown = errors.New("gray has been shut down (or was never initialised in this session): call gray.Init first")

// Node is the driver's runtime for one machine.
type Node struct {
	cfg     Config
	ctrl    ControlStore
	dir     string
	ln      net.Listener
	root    ids.TaskID
	count   atomic.Uint64 // tasks submitted by the driver
	puts    atomic.Uint64 // objects put by the driver
	done    chan struct{} // closed by Shutdown
	sinceGC atomic.Int64  // bytes put into shared memory since the last collection

	mu         sync.Mutex
	closed     bool
	store      ObjectStore
	waiters    map[ids.ObjectID][]waiter
	pins       map[ids.ObjectID]int  // queued tasks that take the object as an argument
	dropped    map[ids.ObjectID]bool // objects the program dropped, to delete once unpinned or stored
	total      task.Resources
	avail      task.Resources
	gpuFree    []int
	queues     map[string]*fifo
	shapes     []string // keys of queues, in creation order
	resumeQ    []*request
	workers    map[int]*proc
	idle       []*proc
	pool       []*proc // live pool (non-actor) workers
	starting   int     // pool workers started but not yet connected
	released   int     // pool workers that gave their CPUs back while blocked
	actors     map[ids.ActorID]*actor
	actorWait  []*actor
	nextWorker int
	errQ       []*task.TaskError // failures to report outside the lock
	dirty      []*proc           // workers with messages to flush at unlock
	badStarts  int               // workers in a row that exited before connecting
	spawnErr   error             // set when workers cannot start at all
	quiet      bool              // failures being stored are intended (gray.Kill): do not report them

	shared     *objstore.Store             // nil: no shared memory, every object inline
	lineage    map[ids.ObjectID]*task.Spec // task results in shared memory -> the task that rebuilds them
	kept       map[ids.ObjectID]int        // arguments of lineage entries: not freed while a rebuild may need them
	dpins      map[ids.ObjectID]int        // store pins held by the driver's Gets until the object is freed
	rebuilding map[ids.TaskID]bool
	nest       nested // references inside values (nested.go)

	wg sync.WaitGroup // every goroutine the node starts
}

// waiter is something waiting for an object: a task's dependency or one
// slot of a Get/Wait request.
type waiter struct {
	p *pending
	r *request
	i int
}

// pending is a submitted task that has not finished.
type pending struct {
	spec    *task.Spec
	entry   *task.Entry
	missing int             // reference arguments not yet available
	failed  *task.TaskError // the first failed argument
	actor   *actor
	orig    *task.Spec     // the spec as submitted (reference arguments intact), for lineage
	pinned  []ids.ObjectID // shared-memory arguments pinned until the task ends
	sent    int64          // when it was handed to a worker, in Config.Events' clock
}

// request is a Get or Wait from the driver or from a worker.
type request struct {
	w      *proc // nil: the driver
	id     uint64
	wait   bool
	ids    []ids.ObjectID
	ready  []bool
	need   int
	have   int
	done   bool
	ch     chan struct{} // driver requests: closed when done
	timer  *time.Timer
	counts bool   // counted in w.blocked
	epoch  uint64 // w.epoch when counted
}

// proc is a worker process.
type proc struct {
	id       int
	name     string
	cmd      *exec.Cmd
	conn     *wire.Conn
	actor    *actor
	tasks    []*pending // sent, in order; the first is running
	shape    string     // resource shape of tasks, while it has some
	recalled bool       // a recall of its queued tasks is under way
	dirty    bool       // in Node.dirty
	held     task.Resources
	gpus     []int
	blocked  int    // outstanding blocking requests of the running task
	epoch    uint64 // counts finished tasks, so a Get outliving its task is not counted against the next
	gaveBack bool   // CPUs returned while blocked
	retiring bool
	dead     bool
	process  *os.Process // set under the node's lock once started
	exited   chan struct{}
	exitErr  error
	readPins []ids.ObjectID        // shared objects its running task got with Get, pinned until it ends
	reserved map[ids.ObjectID]bool // results of its running task it is writing into reserved room
	holds    map[ids.ObjectID]int  // references it decoded out of values and has not dropped (see nested.go)
}

// actor is one actor and its dedicated worker.
type actor struct {
	id       ids.ActorID
	typ      string
	res      task.Resources
	gpus     []int
	holding  bool
	w        *proc
	queue    []*pending // not yet sent, in submission order
	inflight []*pending // sent, in order
	dead     bool
	death    *task.TaskError
	draining bool // no handle remains: exit once the queue is empty
	killed   bool // by gray.Kill: its calls fail quietly (ErrActorDead, no report)

	kept []ids.ObjectID // gray.Shared arguments it holds until it dies (see kept.go)
}

type fifo struct {
	items []*pending
	head  int
}

func (q *fifo) len() int { return len(q.items) - q.head }
func (q *fifo) push(p *pending) {
	if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	q.items = append(q.items, p)
}
func (q *fifo) front() *pending { return q.items[q.head] }
func (q *fifo) pop() *pending {
	p := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	return p
}

// Start starts a node: its socket, its control and object stores and its
// pool of workers. It returns once the pool's workers have connected, or
// with ctx's error.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Resources.CPU < 0 || cfg.Resources.GPU < 0 {
		return nil, fmt.Errorf("gray: negative resources %s", cfg.Resources)
	}
	for k, v := range cfg.Resources.Custom {
		if v < 0 || k == "" {
			return nil, fmt.Errorf("gray: custom resource %q=%g: names must be non-empty and amounts non-negative", k, v)
		}
	}
	if cfg.NumWorkers <= 0 {
		cfg.NumWorkers = max(1, int(math.Ceil(cfg.Resources.CPU)))
	}
	if cfg.Output == nil {
		cfg.Output = os.Stdout
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("gray: finding the program's executable to start workers: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.Control == nil {
		cfg.Control = NewMemControl()
	}
	if cfg.Store == nil {
		cfg.Store = NewMemStore()
	}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("gray: creating the worker log folder: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "gray-")
	if err != nil {
		return nil, fmt.Errorf("gray: creating the session folder: %w", err)
	}
	sock := filepath.Join(dir, "node.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gray: listening on %s: %w", sock, err)
	}
	n := &Node{
		cfg:     cfg,
		ctrl:    cfg.Control,
		dir:     dir,
		ln:      ln,
		root:    ids.Root(cfg.Seed, cfg.Seeded),
		done:    make(chan struct{}),
		store:   cfg.Store,
		waiters: map[ids.ObjectID][]waiter{},
		pins:    map[ids.ObjectID]int{},
		dropped: map[ids.ObjectID]bool{},
		total:   cloneRes(cfg.Resources),
		avail:   cloneRes(cfg.Resources),
		queues:  map[string]*fifo{},
		workers: map[int]*proc{},
		actors:  map[ids.ActorID]*actor{},

		shared:     cfg.Shared,
		lineage:    map[ids.ObjectID]*task.Spec{},
		kept:       map[ids.ObjectID]int{},
		dpins:      map[ids.ObjectID]int{},
		rebuilding: map[ids.TaskID]bool{},
	}
	for i := 0; i < int(cfg.Resources.GPU); i++ {
		n.gpuFree = append(n.gpuFree, i)
	}
	n.wg.Add(1)
	go n.acceptLoop()
	n.mu.Lock()
	for range cfg.NumWorkers {
		n.spawn(nil)
	}
	n.unlock()
	// Wait for the pool so the first tasks find workers ready.
	for {
		n.mu.Lock()
		s, serr := n.starting, n.spawnErr
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

func cloneRes(r task.Resources) task.Resources {
	c := task.Resources{CPU: r.CPU, GPU: r.GPU, Custom: map[string]float64{}}
	for k, v := range r.Custom {
		c.Custom[k] = v
	}
	return c
}

// Total returns the node's resources.
func (n *Node) Total() task.Resources { return cloneRes(n.total) }

// Available returns the resources not in use now.
func (n *Node) Available() task.Resources {
	n.mu.Lock()
	defer n.unlock()
	return cloneRes(n.avail)
}

// Errors returns every task failure seen so far.
func (n *Node) Errors() []*task.TaskError { return n.ctrl.Errors() }

// NewTaskID returns the ID for the next task the driver submits.
func (n *Node) NewTaskID() ids.TaskID { return ids.Child(n.root, n.count.Add(1)) }

// NewPutID returns the ID for the next object the driver puts.
func (n *Node) NewPutID() ids.ObjectID { return ids.Put(n.root, n.puts.Add(1)) }

// WorkerName names the driver in error messages.
func (n *Node) WorkerName() string { return fmt.Sprintf("driver (pid %d)", os.Getpid()) }

// feasible reports why a request can never be met on this node, or nil.
func (n *Node) feasible(name string, r task.Resources) error {
	check := func(res string, want, have float64) error {
		if want > have {
			return fmt.Errorf("%s asks for %s=%g but this node has %s=%g in all, so it can never run; lower the request or start gray with more (gray.Options NumCPUs, NumGPUs, Resources)", name, res, want, res, have)
		}
		return nil
	}
	if err := check("CPU", r.CPU, n.total.CPU); err != nil {
		return err
	}
	if err := check("GPU", r.GPU, n.total.GPU); err != nil {
		return err
	}
	if r.GPU != math.Trunc(r.GPU) {
		return fmt.Errorf("%s asks for GPU=%g: GPU requests must be whole numbers", name, r.GPU)
	}
	for k, v := range r.Custom {
		if err := check(k, v, n.total.Custom[k]); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) fits(r *task.Resources) bool {
	if r.CPU > n.avail.CPU+1e-9 || r.GPU > n.avail.GPU+1e-9 {
		return false
	}
	for k, v := range r.Custom {
		if v > n.avail.Custom[k]+1e-9 {
			return false
		}
	}
	return true
}

func (n *Node) acquire(r *task.Resources) []int {
	n.avail.CPU -= r.CPU
	n.avail.GPU -= r.GPU
	for k, v := range r.Custom {
		n.avail.Custom[k] -= v
	}
	g := int(r.GPU)
	if g == 0 {
		return nil
	}
	gpus := append([]int(nil), n.gpuFree[:g]...)
	n.gpuFree = n.gpuFree[g:]
	return gpus
}

func (n *Node) release(r *task.Resources, cpu bool, gpus []int) {
	if cpu {
		n.avail.CPU += r.CPU
	}
	n.avail.GPU += r.GPU
	for k, v := range r.Custom {
		n.avail.Custom[k] += v
	}
	n.gpuFree = append(n.gpuFree, gpus...)
	sort.Ints(n.gpuFree)
}

func shapeKey(r *task.Resources) string {
	if len(r.Custom) == 0 && r.GPU == 0 {
		if r.CPU == 1 {
			return "CPU=1"
		}
	}
	return r.String()
}

// Submit queues a task submitted by the driver or a worker. A task that can
// never run (unregistered, impossible resources, unknown actor) is an error,
// which is also stored as the value of its returns.
func (n *Node) Submit(s *task.Spec) error {
	n.mu.Lock()
	err := n.submitLocked(s)
	n.unlock()
	n.flushErrors()
	return err
}

func (n *Node) submitLocked(s *task.Spec) error {
	if n.closed {
		return ErrShutdown
	}
	if n.spawnErr != nil {
		te := &task.TaskError{Function: s.Func, Message: n.spawnErr.Error(), Cause: n.spawnErr}
		n.storeReturns(s, te)
		return n.spawnErr
	}
	e, err := task.Lookup(s.Func)
	if err == nil && s.Kind != e.Kind {
		err = fmt.Errorf("%q is registered as a different kind of remote (function, actor type or method)", s.Func)
	}
	if err == nil && s.Kind != task.KindActorMethod {
		err = n.feasible(s.Func, task.Res(s, e))
	}
	var a *actor
	if err == nil {
		switch s.Kind {
		case task.KindActorCreate:
			if _, dup := n.actors[s.ID]; dup {
				err = fmt.Errorf("actor %s exists already", s.ID)
			}
		case task.KindActorMethod:
			a = n.actors[s.Actor]
			if a == nil {
				err = fmt.Errorf("calling %s: actor %s is unknown in this session (a handle from another session?)", s.Func, s.Actor)
			}
		}
	}
	if err != nil {
		te := &task.TaskError{Function: s.Func, Message: err.Error(), Cause: err}
		n.storeReturns(s, te)
		return err
	}
	n.ctrl.TaskSubmitted(s)
	p := &pending{spec: s, entry: e, actor: a}
	if s.Kind == task.KindFunc && n.shared != nil {
		orig := *s
		orig.Args = append([]task.Arg(nil), s.Args...)
		p.orig = &orig
	}
	if s.Kind == task.KindActorCreate {
		a = &actor{id: s.ID, typ: s.Func, res: task.Res(s, e)}
		p.actor = a
		n.actors[s.ID] = a
	}
	for i := range s.Args {
		arg := &s.Args[i]
		if !arg.IsRef {
			continue
		}
		n.pins[arg.Ref]++
		if o, ok := n.have(arg.Ref); ok {
			if o.Err != nil && p.failed == nil {
				p.failed = o.Err
			}
			n.pinFor(p, arg.Ref, o)
			continue
		}
		p.missing++
		n.waiters[arg.Ref] = append(n.waiters[arg.Ref], waiter{p: p})
	}
	switch s.Kind {
	case task.KindFunc:
		if p.missing == 0 {
			n.ready(p)
		}
	case task.KindActorCreate:
		a.queue = append(a.queue, p)
		n.actorWait = append(n.actorWait, a)
		n.schedule()
	case task.KindActorMethod:
		if a.dead || a.draining {
			n.quiet = a.killed
			n.finishErr(p, n.deadErr(a, s.Func))
			n.quiet = false
			return nil
		}
		a.queue = append(a.queue, p)
		n.pump(a)
	}
	return nil
}

func (n *Node) deadErr(a *actor, fn string) *task.TaskError {
	msg := fmt.Sprintf("actor %s %s is dead", a.typ, a.id)
	var cause error = task.ErrActorDead
	if a.death != nil {
		msg = fmt.Sprintf("actor %s %s is dead: %s", a.typ, a.id, a.death.Message)
		cause = a.death
	}
	return &task.TaskError{Function: fn, Message: msg, Cause: cause}
}

// ready handles a normal task whose arguments all exist.
func (n *Node) ready(p *pending) {
	if p.failed != nil {
		n.finishErr(p, argErr(p))
		return
	}
	k := shapeKey(&p.entry.Res)
	q := n.queues[k]
	if q == nil {
		q = &fifo{}
		n.queues[k] = q
		n.shapes = append(n.shapes, k)
	}
	q.push(p)
	n.schedule()
}

func argErr(p *pending) *task.TaskError {
	return &task.TaskError{
		Function: p.spec.Func,
		Message:  fmt.Sprintf("an argument failed: %s", firstLine(p.failed.Error())),
		Cause:    p.failed,
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// schedule is the node-local scheduler: it resumes unblocked workers, starts
// actors and dispatches queued tasks while resources and workers allow.
func (n *Node) schedule() {
	if n.closed {
		return
	}
	for len(n.resumeQ) > 0 {
		r := n.resumeQ[0]
		w := r.w
		if w.dead || len(w.tasks) == 0 {
			n.resumeQ = n.resumeQ[1:]
			continue
		}
		need := task.Resources{CPU: w.held.CPU}
		if !n.fits(&need) {
			break
		}
		n.resumeQ = n.resumeQ[1:]
		n.avail.CPU -= w.held.CPU
		w.gaveBack = false
		n.released--
		n.reply(r)
	}
	if len(n.actorWait) > 0 {
		keep := n.actorWait[:0]
		for _, a := range n.actorWait {
			if a.dead {
				continue
			}
			if !n.fits(&a.res) {
				keep = append(keep, a)
				continue
			}
			a.gpus = n.acquire(&a.res)
			a.holding = true
			n.spawn(a)
		}
		n.actorWait = keep
	}
	for _, k := range n.shapes {
		q := n.queues[k]
		for q.len() > 0 {
			p := q.front()
			fits := n.fits(&p.entry.Res)
			if fits {
				if w := n.popIdle(); w != nil {
					q.pop()
					n.run(w, p)
					continue
				}
			}
			// With a backlog and no idle worker, queue the task behind a
			// busy worker running tasks of the same shape: the worker
			// starts it the moment it is done, without a round trip.
			if q.len() > 1 && p.entry.MaxCalls == 0 {
				if w := n.pipelineTarget(k); w != nil {
					q.pop()
					n.send(w, p)
					continue
				}
			}
			if fits {
				n.grow(q.len())
			}
			break
		}
	}
}

// maxPipeline bounds the tasks queued at one worker, so a long task holds
// few others back.
const maxPipeline = 16

// pipelineTarget returns the busy pool worker with the shortest queue
// among those running tasks of shape k, or nil.
func (n *Node) pipelineTarget(k string) *proc {
	var best *proc
	for _, w := range n.pool {
		if w.dead || w.retiring || w.blocked > 0 || w.recalled || len(w.tasks) == 0 || len(w.tasks) >= maxPipeline || w.shape != k {
			continue
		}
		if best == nil || len(w.tasks) < len(best.tasks) {
			best = w
		}
	}
	return best
}

func (n *Node) popIdle() *proc {
	for len(n.idle) > 0 {
		w := n.idle[len(n.idle)-1]
		n.idle = n.idle[:len(n.idle)-1]
		if !w.dead && !w.retiring {
			return w
		}
	}
	return nil
}

// grow starts pool workers when tasks wait for one: enough that the
// workers not blocked in Get reach NumWorkers (or the CPU count).
func (n *Node) grow(queued int) {
	limit := max(n.cfg.NumWorkers, int(math.Ceil(n.total.CPU)))
	active := n.starting - n.released
	for _, w := range n.workers {
		if w.actor == nil && !w.dead && !w.retiring {
			active++
		}
	}
	for i := 0; i < queued && active < limit; i++ {
		n.spawn(nil)
		active++
	}
}

// run gives p to the idle worker w, reserving p's resources for as long as
// w has tasks of p's shape.
func (n *Node) run(w *proc, p *pending) {
	w.held = p.entry.Res
	w.gpus = n.acquire(&w.held)
	w.shape = shapeKey(&w.held)
	n.send(w, p)
}

// send queues p at w.
func (n *Node) send(w *proc, p *pending) {
	s := p.spec
	n.resolveArgs(s)
	s.GPUIDs = w.gpus
	p.sent = n.cfg.Events.Now()
	w.tasks = append(w.tasks, p)
	// A broken connection is noticed by the reader, which fails the task.
	_ = n.append(w, task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) })
}

// resolveArgs replaces reference arguments by their values: the objects live
// in the driver, so sending them with the task saves the worker a round trip.
// The task no longer needs the objects afterwards.
//
// A shared-memory argument is sent as its ID and size; the task's pin (see
// pinFor) keeps it from eviction and freeing until the task ends.
func (n *Node) resolveArgs(s *task.Spec) {
	for i := range s.Args {
		a := &s.Args[i]
		if a.IsRef {
			o, _ := n.store.Get(a.Ref)
			a.IsRef = false
			if o.Shared && o.Err == nil {
				a.Shared, a.Size = true, o.Size
			} else {
				a.Data = o.Data
			}
			n.unpin(a.Ref)
		}
	}
}

// have returns the object id if it is readable now. A shared object that
// was evicted is not: it is rebuilt from its lineage (and waited for like
// any object being computed), or, when it cannot be, replaced by an error
// saying why.
func (n *Node) have(id ids.ObjectID) (task.Object, bool) {
	o, ok := n.store.Get(id)
	if !ok || !o.Shared || o.Err != nil || n.shared.Contains(storeID(id)) {
		return o, ok
	}
	return n.rebuild(id)
}

// rebuild re-runs the task that made the evicted object id.
func (n *Node) rebuild(id ids.ObjectID) (task.Object, bool) {
	spec := n.lineage[id]
	if spec == nil {
		msg := fmt.Sprintf("object %s was evicted from the object store and cannot be rebuilt: it was made by Put (or by an actor method), which cannot be re-run; raise Options.ObjectStoreMemory or keep fewer large objects alive", id)
		o := task.Object{Shared: true, Err: &task.TaskError{Function: "(object store)", Message: msg, Cause: objstore.ErrEvicted}}
		n.store.Delete(id)
		n.store.Put(id, o)
		return o, true
	}
	if !n.rebuilding[spec.ID] {
		n.rebuilding[spec.ID] = true
		for i := range max(spec.NumReturns, 1) {
			r := spec.Return(i)
			if o, ok := n.store.Get(r); ok && o.Shared && o.Err == nil && !n.shared.Contains(storeID(r)) {
				n.store.Delete(r)
			}
		}
		again := *spec
		again.Args = append([]task.Arg(nil), spec.Args...)
		_ = n.submitLocked(&again)
	}
	return task.Object{}, false
}

// pinFor pins p's shared-memory argument id in the store until p ends.
func (n *Node) pinFor(p *pending, id ids.ObjectID, o task.Object) {
	if o.Shared && o.Err == nil && n.shared.Pin(storeID(id)) == nil {
		p.pinned = append(p.pinned, id)
	}
}

// unpinStore drops the store pins in ids.
func (n *Node) unpinStore(pins []ids.ObjectID) {
	for _, id := range pins {
		_ = n.shared.Unpin(storeID(id))
	}
}

func storeID(id ids.ObjectID) objstore.ID { return objstore.ID(id.String()) }

// unpinArgs releases the objects of a task that ends without running.
func (n *Node) unpinArgs(p *pending) {
	s := p.spec
	n.unpinStore(p.pinned)
	p.pinned = nil
	for i := range s.Args {
		if a := &s.Args[i]; a.IsRef {
			a.IsRef = false
			n.unpin(a.Ref)
		}
	}
}

// unpin drops a task's claim on an object, freeing it if the program has
// dropped it too.
func (n *Node) unpin(id ids.ObjectID) { n.dropClaim(n.pins, id) }

// unkeep drops a lineage entry's claim on an argument.
func (n *Node) unkeep(id ids.ObjectID) { n.dropClaim(n.kept, id) }

// dropClaim drops one claim counted in claims, freeing the object once its
// last claim is gone and the program has dropped it too.
func (n *Node) dropClaim(claims map[ids.ObjectID]int, id ids.ObjectID) {
	if c := claims[id]; c > 1 {
		claims[id] = c - 1
		return
	}
	delete(claims, id)
	if n.dropped[id] {
		n.free(id)
	}
}

// free deletes an object nobody can ask for any more. One still being
// computed is deleted when it arrives.
func (n *Node) free(id ids.ObjectID) {
	if n.pins[id] > 0 || n.kept[id] > 0 || len(n.waiters[id]) > 0 || n.nest.contained[id] > 0 || n.nest.held[id] > 0 {
		n.dropped[id] = true
		return
	}
	o, ok := n.store.Get(id)
	if !ok {
		n.dropped[id] = true
		return
	}
	delete(n.dropped, id)
	n.store.Delete(id)
	n.releaseChildren(id)
	if !o.Shared {
		return
	}
	// The store frees the memory at once, or when the last task or Get
	// still reading it unpins it.
	sid := storeID(id)
	for range n.dpins[id] {
		_ = n.shared.Unpin(sid)
	}
	delete(n.dpins, id)
	_ = n.shared.Release(sid)
	if spec := n.lineage[id]; spec != nil {
		delete(n.lineage, id)
		for _, a := range spec.Args {
			if a.IsRef {
				n.unkeep(a.Ref)
			}
		}
	}
}

// Drop tells the node that the program holds no reference to the object:
// once no queued task needs it either, it is deleted. Only objects whose
// references never left the driver are dropped (see the gray package).
func (n *Node) Drop(id ids.ObjectID) {
	n.mu.Lock()
	if !n.closed {
		n.drop(id)
	}
	n.mu.Unlock()
}

// Free releases objects the program promised not to use again (gray.Free),
// without waiting for their references to be collected. Queued and running
// tasks that take one as an argument keep it until they end; otherwise its
// memory (shared pages included, which the store reuses for the next put) is
// released at once, and what remains under its ID is a small error saying
// it was freed, so a later Get fails clearly instead of waiting forever.
func (n *Node) Free(oids []ids.ObjectID) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	for _, id := range oids {
		n.freeNow(id)
	}
	return nil
}

func (n *Node) freeNow(id ids.ObjectID) {
	if o, ok := n.store.Get(id); ok && o.Err != nil && errors.Is(o.Err, task.ErrFreed) {
		return // freed before
	}
	n.free(id)
	if _, ok := n.store.Get(id); ok || n.dropped[id] {
		return // still needed by a task: freed when it ends
	}
	n.store.Put(id, task.Object{Err: &task.TaskError{
		Function: "(object store)",
		Message:  fmt.Sprintf("object %s was freed with gray.Free; do not use a reference after freeing it", id),
		Cause:    task.ErrFreed,
	}})
}

// Objects returns how many objects the node's store holds.
func (n *Node) Objects() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.store.Len()
}

// append queues a message for w; it is written when the node's lock is
// released (see unlock), so a burst of messages to one worker costs one write.
func (n *Node) append(w *proc, typ byte, fn func([]byte) []byte) error {
	if w.conn == nil {
		return wire.ErrClosed
	}
	if !w.dirty {
		w.dirty = true
		n.dirty = append(n.dirty, w)
	}
	return w.conn.Append(typ, fn)
}

// unlock releases the node's lock and writes the messages queued under it.
// Writing outside the lock keeps a slow socket from stalling the node.
func (n *Node) unlock() {
	d := n.dirty
	n.dirty = nil
	for _, w := range d {
		w.dirty = false
	}
	n.mu.Unlock()
	for _, w := range d {
		_ = w.conn.Flush()
	}
}

// unlockFor is unlock for the reader of w's connection: while more input
// from w is already buffered, queued messages wait for the next unlock, so
// replies to a burst go out together.
func (n *Node) unlockFor(w *proc) {
	if w.conn.Buffered() > 0 {
		n.mu.Unlock()
		return
	}
	n.unlock()
}

// requeue puts tasks that a worker gave back (or never started before it
// died) at the front of their queues, in order.
func (n *Node) requeue(ps []*pending) {
	if len(ps) == 0 {
		return
	}
	byShape := map[string][]*pending{}
	for _, p := range ps {
		k := shapeKey(&p.entry.Res)
		byShape[k] = append(byShape[k], p)
	}
	for k, list := range byShape {
		q := n.queues[k]
		q.items = append(list, q.items[q.head:]...)
		q.head = 0
	}
	n.schedule()
}

// pump sends an actor's queued calls whose arguments exist, in order.
func (n *Node) pump(a *actor) {
	if a.w == nil || a.w.conn == nil || a.dead {
		return
	}
	for len(a.queue) > 0 {
		p := a.queue[0]
		if p.missing > 0 {
			return
		}
		a.queue = a.queue[1:]
		if p.failed != nil {
			if p.spec.Kind == task.KindActorCreate {
				n.actorDied(a, &task.TaskError{Function: a.typ, Message: "an argument of the constructor failed", Cause: p.failed})
				return
			}
			n.finishErr(p, argErr(p))
			continue
		}
		n.holdKept(a, p.spec)
		n.resolveArgs(p.spec)
		p.spec.GPUIDs = a.gpus
		a.inflight = append(a.inflight, p)
		p.sent = n.cfg.Events.Now()
		s := p.spec
		_ = n.append(a.w, task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) })
	}
	if a.draining && len(a.inflight) == 0 {
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "no handle to the actor remains", Cause: task.ErrActorDead})
	}
}

// finishErr fails every return of p with e.
func (n *Node) finishErr(p *pending, e *task.TaskError) {
	n.unpinArgs(p)
	n.storeReturns(p.spec, e)
	n.ctrl.TaskFinished(p.spec.ID, e)
}

func (n *Node) storeReturns(s *task.Spec, e *task.TaskError) {
	if s.Kind == task.KindActorCreate {
		n.constructed(s) // the failure reaches the actor's calls instead
	} else {
		for i := range max(s.NumReturns, 1) {
			n.putLocked(s.Return(i), task.Object{Err: e})
		}
	}
	if n.quiet {
		return
	}
	n.ctrl.AddError(e)
	n.errQ = append(n.errQ, e)
}

// flushErrors reports failures collected under the lock.
func (n *Node) flushErrors() {
	n.mu.Lock()
	q := n.errQ
	n.errQ = nil
	n.unlock()
	if n.cfg.OnError != nil {
		for _, e := range q {
			n.cfg.OnError(e)
		}
	}
}

// Put stores an object.
func (n *Node) Put(id ids.ObjectID, o task.Object) error {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	n.putLocked(id, o)
	return nil
}

func (n *Node) putLocked(id ids.ObjectID, o task.Object) {
	n.store.Put(id, o)
	if n.dropped[id] {
		defer n.free(id)
	}
	ws, ok := n.waiters[id]
	if !ok {
		return
	}
	delete(n.waiters, id)
	for _, w := range ws {
		if w.p != nil {
			p := w.p
			if o.Err != nil && p.failed == nil {
				p.failed = o.Err
			}
			p.missing--
			n.pinFor(p, id, o)
			if p.missing == 0 {
				if p.actor != nil {
					n.pump(p.actor)
				} else {
					n.ready(p)
				}
			}
			continue
		}
		r := w.r
		if r.done || r.ready[w.i] {
			continue
		}
		r.ready[w.i] = true
		r.have++
		if r.have >= r.need {
			n.complete(r)
		}
	}
}

// newRequest registers a Get (need = len) or Wait request.
func (n *Node) newRequest(w *proc, id uint64, oids []ids.ObjectID, need int, wait bool) *request {
	r := &request{w: w, id: id, wait: wait, ids: oids, ready: make([]bool, len(oids)), need: need}
	for i, o := range oids {
		if _, ok := n.have(o); ok {
			r.ready[i] = true
			r.have++
		}
	}
	if w == nil {
		r.ch = make(chan struct{})
	}
	if r.have >= r.need {
		r.done = true
		if r.ch != nil {
			close(r.ch)
		}
		return r
	}
	for i, o := range oids {
		if !r.ready[i] {
			n.waiters[o] = append(n.waiters[o], waiter{r: r, i: i})
		}
	}
	return r
}

// complete finishes a request: a driver request's channel closes; a worker
// that gave its CPU back must get it again before it resumes.
func (n *Node) complete(r *request) {
	if r.done {
		return
	}
	r.done = true
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.w == nil {
		close(r.ch)
		return
	}
	w := r.w
	if w.dead {
		return
	}
	if r.counts && r.epoch == w.epoch {
		w.blocked--
		if w.blocked == 0 && w.gaveBack {
			n.resumeQ = append(n.resumeQ, r)
			n.schedule()
			return
		}
	}
	n.reply(r)
}

func (n *Node) reply(r *request) {
	w := r.w
	if r.wait {
		_ = n.append(w, task.MsgWaitReply, func(b []byte) []byte {
			b = wire.AppendUvarint(b, r.id)
			b = wire.AppendUvarint(b, uint64(len(r.ready)))
			for _, ok := range r.ready {
				if ok {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			}
			return b
		})
		return
	}
	// Pin the shared objects until the worker's task ends, so its mappings
	// stay valid. One evicted since it became ready (rare: between
	// readiness and this reply) is rebuilt from its lineage and the request
	// waits for it again, as if it had not been ready; one that cannot be
	// rebuilt has been replaced by an error saying why, which is sent.
	pinned := w.readPins
	restarts := 0
	var failed map[int]error
	for i := 0; i < len(r.ids); i++ {
		id := r.ids[i]
		o, ok := n.store.Get(id)
		if !ok || !o.Shared || o.Err != nil {
			continue
		}
		err := n.shared.Pin(storeID(id))
		if err == nil {
			pinned = append(pinned, id)
			continue
		}
		if restarts == len(r.ids) {
			// Should not happen; never loop: send the error.
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = err
			continue
		}
		n.unpinStore(pinned[len(w.readPins):])
		pinned = pinned[:len(w.readPins)]
		if _, ok := n.have(id); ok {
			// Readable again, or replaced by an error: pin from the start.
			restarts++
			i = -1
			continue
		}
		r.done, r.ready[i] = false, false
		r.have--
		n.waiters[id] = append(n.waiters[id], waiter{r: r, i: i})
		n.block(w, r)
		return
	}
	w.readPins = pinned
	_ = n.append(w, task.MsgGetReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, r.id)
		b = wire.AppendUvarint(b, uint64(len(r.ids)))
		for i, id := range r.ids {
			o, _ := n.store.Get(id)
			if err := failed[i]; err != nil {
				o = task.Object{Err: &task.TaskError{Function: "(object store)", Message: fmt.Sprintf("object %s: %v", id, err), Cause: err}}
			}
			b = task.AppendObject(b, &o)
		}
		return b
	})
}

// block gives a blocked worker's CPUs back so other tasks (its own
// children, typically) can run; the seeds' nested example needs this to
// finish with one CPU.
func (n *Node) block(w *proc, r *request) {
	r.counts = true
	r.epoch = w.epoch
	w.blocked++
	if w.blocked == 1 && w.actor == nil && len(w.tasks) > 0 && !w.gaveBack {
		w.gaveBack = true
		n.released++
		n.avail.CPU += w.held.CPU
		if len(w.tasks) > 1 && !w.recalled {
			// Tasks queued behind the blocked one might be what it waits
			// for: ask for them back.
			w.recalled = true
			_ = n.append(w, task.MsgRecall, nil)
		}
		n.schedule()
	}
}

// Get returns the objects, waiting for those not yet stored.
func (n *Node) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil, ErrShutdown
	}
	r := n.newRequest(nil, 0, oids, len(oids), false)
	done := r.done
	n.unlock()
	if !done {
		select {
		case <-r.ch:
		case <-ctx.Done():
			n.mu.Lock()
			r.done = true
			n.unlock()
			return nil, fmt.Errorf("gray: get: %w", ctx.Err())
		case <-n.done:
			return nil, ErrShutdown
		}
	}
	out := make([]task.Object, len(oids))
	n.mu.Lock()
	for i, id := range oids {
		o, ok := n.store.Get(id)
		if !ok {
			n.unlock()
			return nil, fmt.Errorf("gray: get: object %s vanished", id)
		}
		if o.Shared && o.Err == nil {
			// Map it (once per object) and pin it until the program drops
			// its last reference: the decoded slices point into the mapping.
			b, err := n.shared.Get(storeID(id))
			if err != nil {
				if errors.Is(err, objstore.ErrEvicted) {
					// Evicted between readiness and now: rebuild and wait.
					n.have(id)
					n.unlock()
					return n.Get(ctx, oids)
				}
				n.unlock()
				return nil, fmt.Errorf("gray: get: object %s: %w", id, err)
			}
			n.dpins[id]++
			if c := n.dpins[id]; c > 1 {
				// One pin per object is enough: it lasts until the object is freed.
				_ = n.shared.Unpin(storeID(id))
				n.dpins[id] = 1
			}
			o.Data = b
		}
		out[i] = o
	}
	n.unlock()
	return out, nil
}

// PutEncoded stores a value of codec.InlineThreshold bytes or more in the
// shared-memory store: it is encoded straight into the object's pages.
func (n *Node) PutEncoded(id ids.ObjectID, size int, encode func([]byte) error) error {
	if n.shared == nil {
		return errors.New("gray: no shared-memory object store in this session")
	}
	w, err := n.shared.Create(storeID(id), int64(size))
	if err != nil {
		return err
	}
	if err := encode(w.Bytes()); err != nil {
		_ = w.Abort()
		return err
	}
	if err := w.Seal(); err != nil {
		return err
	}
	// Shared memory is invisible to Go's GC pacer: a program that puts and
	// drops large objects would grow the store (and allocate fresh pages)
	// long before a collection runs the dropped Refs' cleanups. Collect
	// after every 1/64 of the capacity put (at least gcEvery), so that
	// freed pages get reused while they are still kept as spares: filling
	// fresh pages is several times slower than a collection of a heap
	// whose large arrays hold no pointers. gray.Free avoids the wait.
	if n.sinceGC.Add(int64(size)) > max(n.shared.Capacity()/64, gcEvery) {
		n.sinceGC.Store(0)
		runtime.GC()
	}
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return ErrShutdown
	}
	n.putLocked(id, task.Object{Shared: true, Size: int64(size)})
	return nil
}

// gcEvery is the fewest bytes put into shared memory between the garbage
// collections PutEncoded forces.
const gcEvery = 32 << 20

// SharedDir returns the shared-memory store's directory ("" without one).
func (n *Node) SharedDir() string {
	if n.shared == nil {
		return ""
	}
	return n.shared.Dir()
}

// SharedStats returns the shared-memory store's bookkeeping.
func (n *Node) SharedStats() objstore.Stats {
	if n.shared == nil {
		return objstore.Stats{}
	}
	return n.shared.Stats()
}

// adopt records a shared object that a worker wrote and sealed; a failure
// (no room, say) becomes the object's value.
func (n *Node) adopt(id ids.ObjectID, o task.Object, w *proc) task.Object {
	if !o.Shared || o.Err != nil {
		return o
	}
	if n.shared == nil {
		return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: "a worker wrote a shared object but the session has no object store"}}
	}
	err := n.shared.Adopt(storeID(id))
	if err == nil || (errors.Is(err, objstore.ErrExists) && n.shared.Contains(storeID(id))) {
		return o
	}
	return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: fmt.Sprintf("storing object %s: %v", id, err), Cause: err}}
}

// sealReserved seals a task result that worker w wrote into room reserved
// for it (see reserve), or drops the room if the task failed instead.
func (n *Node) sealReserved(id ids.ObjectID, o task.Object, w *proc) task.Object {
	if !o.Shared || o.Err != nil {
		_ = n.shared.Abort(storeID(id))
		return o
	}
	if err := n.shared.Seal(storeID(id)); err != nil {
		return task.Object{Err: &task.TaskError{Function: "(object store)", Worker: w.name, Message: fmt.Sprintf("storing object %s: %v", id, err), Cause: err}}
	}
	return o
}

// abortReserved drops the room reserved for w's results that were not
// delivered (the task failed, or the worker died).
func (n *Node) abortReserved(w *proc) {
	for id := range w.reserved {
		_ = n.shared.Abort(storeID(id))
	}
	clear(w.reserved)
}

// reserve makes room in the shared-memory store for a task result that
// worker w is about to write (MsgReserve), reusing the pages of freed
// objects, and answers with a MsgReserveReply. The store is called without
// the node's lock: allocating fresh pages can take a while.
func (n *Node) reserve(w *proc, rid uint64, id ids.ObjectID, size int64) {
	status, msg := task.ReserveOK, ""
	var err error
	if n.shared == nil {
		err = errors.New("the session has no shared-memory object store")
	} else {
		err = n.shared.Reserve(storeID(id), size)
	}
	switch {
	case err == nil:
	case errors.Is(err, objstore.ErrExists) && n.shared.Contains(storeID(id)):
		status = task.ReserveExists
	default:
		status, msg = task.ReserveFailed, err.Error()
	}
	n.mu.Lock()
	if status == task.ReserveOK {
		if w.dead || n.closed {
			_ = n.shared.Abort(storeID(id))
		} else {
			if w.reserved == nil {
				w.reserved = map[ids.ObjectID]bool{}
			}
			w.reserved[id] = true
		}
	}
	_ = n.append(w, task.MsgReserveReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = append(b, status)
		return wire.AppendString(b, msg)
	})
	n.unlockFor(w)
}

// Wait returns which of the objects exist once num of them do, or timeout
// (0: none) has passed, or ctx is done.
func (n *Node) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil, ErrShutdown
	}
	r := n.newRequest(nil, 0, oids, num, true)
	done := r.done
	n.unlock()
	if !done {
		var tc <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			tc = t.C
		}
		select {
		case <-r.ch:
		case <-tc:
		case <-ctx.Done():
			n.mu.Lock()
			r.done = true
			n.unlock()
			return nil, fmt.Errorf("gray: wait: %w", ctx.Err())
		case <-n.done:
			return nil, ErrShutdown
		}
	}
	n.mu.Lock()
	defer n.unlock()
	r.done = true
	return append([]bool(nil), r.ready...), nil
}

// Kill ends an actor now: queued and running calls fail and its resources
// are released.
func (n *Node) Kill(id ids.ActorID) error {
	n.mu.Lock()
	a := n.actors[id]
	if a == nil {
		n.unlock()
		return fmt.Errorf("gray: kill: actor %s is unknown in this session", id)
	}
	if !a.dead {
		// Killed on purpose: its calls' references hold ErrActorDead, but
		// that is no failure to print or list.
		n.quiet, a.killed = true, true
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "it was killed", Cause: task.ErrActorDead})
		n.quiet = false
	}
	n.unlock()
	n.flushErrors()
	return nil
}

// Release ends an actor once its queued calls are done: the program holds
// no handle to it any more.
func (n *Node) Release(id ids.ActorID) {
	n.mu.Lock()
	defer n.unlock()
	a := n.actors[id]
	if a == nil || a.dead || n.closed {
		return
	}
	a.draining = true
	if a.w != nil && len(a.queue) == 0 && len(a.inflight) == 0 {
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "no handle to the actor remains", Cause: task.ErrActorDead})
	}
}

// actorDied marks a dead, fails its calls, frees its resources and stops its
// process.
func (n *Node) actorDied(a *actor, why *task.TaskError) {
	if a.dead {
		return
	}
	a.dead = true
	a.death = why
	n.ctrl.ActorDied(a.id, why.Message)
	for _, p := range a.inflight {
		n.finishErr(p, n.deadErr(a, p.spec.Func))
	}
	for _, p := range a.queue {
		n.finishErr(p, n.deadErr(a, p.spec.Func))
	}
	a.inflight, a.queue = nil, nil
	n.releaseKept(a)
	if a.holding {
		a.holding = false
		n.release(&a.res, true, a.gpus)
	}
	if w := a.w; w != nil && !w.dead {
		if w.conn != nil {
			_ = n.append(w, task.MsgExit, nil)
		}
		if w.process != nil {
			_ = w.process.Kill()
		}
	}
	n.schedule()
}

// spawn starts a worker process; a is the actor it will host, or nil for a
// pool worker. The fork happens on a new goroutine so the lock isn't held
// across it.
func (n *Node) spawn(a *actor) {
	if n.spawnErr != nil {
		if a != nil {
			n.actorDied(a, &task.TaskError{Function: a.typ, Message: n.spawnErr.Error(), Cause: n.spawnErr})
		}
		return
	}
	n.nextWorker++
	w := &proc{id: n.nextWorker, actor: a, exited: make(chan struct{})}
	w.name = fmt.Sprintf("worker %d", w.id)
	n.workers[w.id] = w
	if a == nil {
		n.starting++
	} else {
		a.w = w
	}
	env := append(os.Environ(),
		task.EnvSocket+"="+filepath.Join(n.dir, "node.sock"),
		task.EnvWorker+"="+strconv.Itoa(w.id))
	if n.shared != nil {
		env = append(env, task.EnvStore+"="+n.shared.Dir(), task.EnvCap+"="+strconv.FormatInt(n.shared.Capacity(), 10))
	}
	if a != nil {
		env = append(env, "CUDA_VISIBLE_DEVICES="+joinInts(a.gpus))
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled worker would otherwise sleep 1 s at every exit.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	cmd := exec.Command(n.cfg.Executable, n.cfg.Args...)
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr()
	w.cmd = cmd
	n.wg.Add(1)
	go n.startProc(w)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func (n *Node) startProc(w *proc) {
	defer n.wg.Done()
	var closers []io.Closer
	var copiers sync.WaitGroup
	prefix := fmt.Sprintf("(worker %d) ", w.id)
	if n.cfg.LogDir != "" {
		for _, suffix := range []string{"out", "err"} {
			f, err := os.Create(filepath.Join(n.cfg.LogDir, fmt.Sprintf("worker-%d.%s", w.id, suffix)))
			if err == nil {
				closers = append(closers, f)
				if suffix == "out" {
					w.cmd.Stdout = f
				} else {
					w.cmd.Stderr = f
				}
			}
		}
	} else {
		for _, stream := range []string{"out", "err"} {
			var pipe io.ReadCloser
			var err error
			if stream == "out" {
				pipe, err = w.cmd.StdoutPipe()
			} else {
				pipe, err = w.cmd.StderrPipe()
			}
			if err != nil {
				continue
			}
			copiers.Add(1)
			go func() {
				defer copiers.Done()
				prefixLines(n.cfg.Output, prefix, pipe)
			}()
		}
	}
	err := w.cmd.Start()
	if err == nil {
		n.mu.Lock()
		w.process = w.cmd.Process
		w.name = fmt.Sprintf("worker %d (pid %d)", w.id, w.process.Pid)
		kill := w.dead || n.closed || (w.actor != nil && w.actor.dead) // killed or shut down while starting
		n.unlock()
		if kill {
			_ = w.process.Kill()
		}
		copiers.Wait() // pipes close when the process exits
		err = w.cmd.Wait()
	} else {
		err = fmt.Errorf("starting %s: %w", n.cfg.Executable, err)
	}
	for _, c := range closers {
		c.Close()
	}
	w.exitErr = err
	close(w.exited)
	n.mu.Lock()
	connected := w.conn != nil
	n.unlock()
	if !connected { // never connected: its reader will not report the death
		n.died(w)
	}
}

func prefixLines(out io.Writer, prefix string, r io.Reader) {
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	for {
		k, err := r.Read(chunk)
		buf = append(buf, chunk[:k]...)
		for {
			i := indexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := make([]byte, 0, len(prefix)+i+1)
			line = append(line, prefix...)
			line = append(line, buf[:i+1]...)
			_, _ = out.Write(line)
			buf = buf[i+1:]
		}
		if err != nil {
			if len(buf) > 0 {
				_, _ = out.Write(append([]byte(prefix), append(buf, '\n')...))
			}
			return
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func (n *Node) acceptLoop() {
	defer n.wg.Done()
	for {
		c, err := n.ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.serve(c)
	}
}

// serve reads one worker's messages until its connection closes.
func (n *Node) serve(c net.Conn) {
	defer n.wg.Done()
	conn := wire.New(c)
	typ, payload, err := conn.Recv()
	if err != nil || typ != task.MsgHello {
		conn.Close()
		return
	}
	d := wire.Dec{B: payload}
	id := int(d.Uvarint())
	n.mu.Lock()
	w := n.workers[id]
	n.badStarts = 0
	if w == nil || w.conn != nil || n.closed || (w.actor != nil && w.actor.dead) {
		n.unlock()
		conn.Close()
		return
	}
	w.conn = conn
	if a := w.actor; a != nil {
		n.ctrl.ActorCreated(a.id, a.typ, w.name)
		n.pump(a)
	} else {
		n.starting--
		n.pool = append(n.pool, w)
		n.idle = append(n.idle, w)
		n.schedule()
	}
	n.unlock()
	for {
		typ, payload, err := conn.Recv()
		if err != nil {
			break
		}
		if err := n.handle(w, typ, payload); err != nil {
			n.mu.Lock() // w.name is written under the lock once the process starts
			name := w.name
			n.mu.Unlock()
			fmt.Fprintf(os.Stderr, "gray: bad message from %s: %v\n", name, err)
			break
		}
	}
	conn.Close()
	n.died(w)
}

func (n *Node) handle(w *proc, typ byte, payload []byte) error {
	d := wire.Dec{B: payload}
	switch typ {
	case task.MsgResult:
		var tid ids.TaskID
		d.Fixed(tid[:])
		retiring := d.Byte() == 1
		cnt := d.Count()
		objs := make([]task.Object, cnt)
		for i := range objs {
			objs[i] = task.DecodeObject(&d)
		}
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.result(w, tid, objs, retiring)
		n.unlockFor(w)
	case task.MsgSubmit:
		s := task.DecodeSpec(&d)
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		_ = n.submitLocked(s) // errors are stored in the task's returns
		n.unlockFor(w)
	case task.MsgPut:
		var id ids.ObjectID
		d.Fixed(id[:])
		o := task.DecodeObject(&d)
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		if w.reserved[id] { // a Put in a task, written into reserved room
			delete(w.reserved, id)
			o = n.sealReserved(id, o, w)
		} else if _, exists := n.store.Get(id); !exists {
			o = n.adopt(id, o, w)
		}
		if _, exists := n.store.Get(id); !exists {
			n.putLocked(id, o)
		}
		n.unlockFor(w)
	case task.MsgDrop:
		cnt := d.Count()
		n.mu.Lock()
		for range cnt {
			var id ids.ObjectID
			d.Fixed(id[:])
			if d.Err == nil && !n.closed {
				w.unhold(id)
				n.drop(id)
			}
		}
		n.unlockFor(w)
		if d.Err != nil {
			return d.Err
		}
	case task.MsgReserve:
		rid := d.Uvarint()
		var id ids.ObjectID
		d.Fixed(id[:])
		size := d.Uvarint()
		if d.Err != nil {
			return d.Err
		}
		n.reserve(w, rid, id, int64(size))
	case task.MsgFree:
		cnt := d.Count()
		n.mu.Lock()
		for range cnt {
			var id ids.ObjectID
			d.Fixed(id[:])
			if d.Err == nil && !n.closed {
				n.freeNow(id)
			}
		}
		n.unlockFor(w)
		if d.Err != nil {
			return d.Err
		}
	case task.MsgGet, task.MsgWait:
		rid := d.Uvarint()
		need, timeout := 0, time.Duration(0)
		if typ == task.MsgWait {
			need = int(d.Uvarint())
			timeout = time.Duration(d.Uvarint())
		}
		cnt := d.Count()
		oids := make([]ids.ObjectID, cnt)
		for i := range oids {
			d.Fixed(oids[i][:])
		}
		if d.Err != nil {
			return d.Err
		}
		if typ == task.MsgGet {
			need = cnt
		}
		n.mu.Lock()
		r := n.newRequest(w, rid, oids, need, typ == task.MsgWait)
		if r.done {
			n.reply(r)
		} else {
			if timeout > 0 {
				r.timer = time.AfterFunc(timeout, func() {
					n.mu.Lock()
					n.complete(r)
					n.unlockFor(w)
				})
			}
			n.block(w, r)
		}
		n.unlockFor(w)
	case task.MsgGiveBack:
		cnt := d.Count()
		back := make(map[ids.TaskID]bool, cnt)
		for range cnt {
			var id ids.TaskID
			d.Fixed(id[:])
			back[id] = true
		}
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		w.recalled = false
		var ps []*pending
		keep := w.tasks[:0]
		for _, p := range w.tasks {
			if back[p.spec.ID] {
				ps = append(ps, p)
			} else {
				keep = append(keep, p)
			}
		}
		w.tasks = keep
		n.requeue(ps)
		n.unlockFor(w)
	case task.MsgKillActor:
		var id ids.ActorID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		_ = n.Kill(id)
	case task.MsgHold, task.MsgContain:
		if err := n.handleNested(w, typ, &d); err != nil {
			return err
		}
	case task.MsgReleaseShared:
		var id ids.ObjectID
		d.Fixed(id[:])
		if d.Err != nil {
			return d.Err
		}
		n.mu.Lock()
		n.releaseOneKept(w, id)
		n.unlockFor(w)
	default:
		return fmt.Errorf("unknown message type %d", typ)
	}
	n.flushErrors()
	return nil
}

// result stores what a task returned and frees its worker.
func (n *Node) result(w *proc, tid ids.TaskID, objs []task.Object, retiring bool) {
	var p *pending
	n.unpinStore(w.readPins)
	w.readPins = w.readPins[:0]
	if a := w.actor; a != nil {
		if len(a.inflight) == 0 || a.inflight[0].spec.ID != tid {
			return // the actor was killed; its calls have failed already
		}
		p = a.inflight[0]
		a.inflight = a.inflight[1:]
	} else {
		if len(w.tasks) == 0 || w.tasks[0].spec.ID != tid {
			return
		}
		p = w.tasks[0]
		w.tasks[0] = nil
		w.tasks = w.tasks[1:]
		lent := w.gaveBack // a Get outlived its task: the CPU is still lent out
		if lent {
			w.gaveBack = false
			n.released--
		}
		w.blocked = 0
		w.epoch++
		if retiring {
			w.retiring = true
		}
		if len(w.tasks) > 0 && lent {
			n.avail.CPU -= w.held.CPU
		}
		if len(w.tasks) == 0 {
			n.release(&w.held, !lent, w.gpus)
			w.held, w.gpus, w.shape = task.Resources{}, nil, ""
			if !retiring && n.surplus() {
				// A spare started to cover blocked workers, now idle:
				// reap it so the pool returns to its size.
				retiring = true
				w.retiring = true
				_ = n.append(w, task.MsgExit, nil)
			}
			if !retiring {
				n.idle = append(n.idle, w)
			}
		}
	}
	n.cfg.Events.Finished(w.id, tid, p.spec.Func, p.sent)
	n.unpinStore(p.pinned)
	p.pinned = nil
	rebuilt := n.rebuilding[tid]
	delete(n.rebuilding, tid)
	var failed *task.TaskError
	for i, o := range objs {
		if p.spec.Kind == task.KindActorCreate {
			if o.Err != nil && failed == nil {
				failed = o.Err
			}
			continue
		}
		id := p.spec.Return(i)
		if _, exists := n.store.Get(id); exists && rebuilt {
			continue // a return that was not evicted: keep the original
		}
		if w.reserved[id] {
			delete(w.reserved, id)
			o = n.sealReserved(id, o, w)
		} else {
			o = n.adopt(id, o, w)
		}
		if o.Err != nil && failed == nil {
			failed = o.Err
		}
		if o.Shared && o.Err == nil && p.orig != nil && n.lineage[id] == nil {
			n.lineage[id] = p.orig
			for _, a := range p.orig.Args {
				if a.IsRef {
					n.kept[a.Ref]++
				}
			}
		}
		n.putLocked(id, o)
	}
	n.abortReserved(w) // reserved for returns the task did not deliver
	if p.spec.Kind == task.KindActorCreate {
		n.constructed(p.spec)
	}
	if failed != nil {
		n.ctrl.AddError(failed)
		n.errQ = append(n.errQ, failed)
	}
	n.ctrl.TaskFinished(tid, failed)
	if p.spec.Kind == task.KindActorCreate && failed != nil {
		n.actorDied(p.actor, &task.TaskError{Function: p.actor.typ, Worker: w.name, Message: "its constructor failed: " + firstLine(failed.Message), Cause: failed})
	}
	if a := w.actor; a != nil && a.draining && len(a.queue) == 0 && len(a.inflight) == 0 {
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "no handle to the actor remains", Cause: task.ErrActorDead})
	}
	n.schedule()
}

// surplus reports whether more pool workers are alive than the pool's size
// plus those blocked in Get (whose CPUs are lent out).
func (n *Node) surplus() bool {
	alive := 0
	for _, x := range n.pool {
		if !x.dead && !x.retiring {
			alive++
		}
	}
	return alive > max(n.cfg.NumWorkers, int(math.Ceil(n.total.CPU)))+n.released
}

// died handles the end of a worker process.
func (n *Node) died(w *proc) {
	select {
	case <-w.exited:
	case <-time.After(2 * time.Second):
	}
	n.mu.Lock()
	if w.dead {
		n.unlock()
		return
	}
	w.dead = true
	delete(n.workers, w.id)
	if n.shared != nil && !n.closed {
		n.unpinStore(w.readPins)
		w.readPins = nil
		n.abortReserved(w)
	}
	if n.closed {
		// Shutdown ends every worker: that is no task failure to report.
		n.unlock()
		return
	}
	n.dropHolds(w)
	if w.conn == nil && w.actor == nil {
		n.starting--
	}
	if w.conn == nil && (w.actor == nil || !w.actor.dead) { // not an actor killed while starting
		n.startFailed(w)
	}
	how := "exited"
	if w.exitErr != nil {
		how = w.exitErr.Error()
	}
	if a := w.actor; a != nil {
		n.actorDied(a, &task.TaskError{Function: a.typ, Worker: w.name, Message: "its worker process died (" + how + ")", Cause: task.ErrWorkerDied})
	} else if len(w.tasks) > 0 {
		p := w.tasks[0]
		n.release(&w.held, !w.gaveBack, w.gpus)
		if w.gaveBack {
			n.released--
		}
		n.finishErr(p, &task.TaskError{Function: p.spec.Func, Worker: w.name, Message: "the worker process died while running it (" + how + ")", Cause: task.ErrWorkerDied})
		// The tasks queued behind it never started: run them elsewhere.
		n.requeue(w.tasks[1:])
		w.tasks = nil
	}
	for i, x := range n.pool {
		if x == w {
			n.pool = append(n.pool[:i], n.pool[i+1:]...)
			break
		}
	}
	if !n.closed {
		// Replace the dead worker so the pool keeps its size.
		alive := n.starting
		for _, x := range n.workers {
			if x.actor == nil && !x.dead && !x.retiring {
				alive++
			}
		}
		if alive < n.cfg.NumWorkers && n.spawnErr == nil {
			n.spawn(nil)
		}
		n.schedule()
	}
	n.unlock()
	n.flushErrors()
}

// startFailed counts a worker that exited before connecting. Several in a
// row mean the program does not serve tasks when started as a worker: stop
// starting workers and fail what waits for one, rather than respawn forever.
func (n *Node) startFailed(w *proc) {
	n.badStarts++
	if n.badStarts < 3 || n.spawnErr != nil {
		return
	}
	why := "exited"
	if w.exitErr != nil {
		why = w.exitErr.Error()
	}
	n.spawnErr = fmt.Errorf("gray: %d worker processes in a row exited before connecting to the driver (last: %s); "+
		"the program must call gray.ServeIfWorker() first thing in main (in TestMain for tests) so that it serves tasks when started as a worker", n.badStarts, why)
	e := &task.TaskError{Function: "(worker start)", Message: n.spawnErr.Error(), Cause: n.spawnErr}
	for _, k := range n.shapes {
		q := n.queues[k]
		for q.len() > 0 {
			n.finishErr(q.pop(), e)
		}
	}
	for _, a := range n.actorWait {
		n.actorDied(a, e)
	}
	n.actorWait = nil
}

// Shutdown stops every worker and frees the node. Calls waiting in Get or
// Wait return ErrShutdown.
func (n *Node) Shutdown() error {
	n.mu.Lock()
	if n.closed {
		n.unlock()
		return nil
	}
	n.closed = true
	close(n.done)
	procs := make([]*proc, 0, len(n.workers))
	conns := []*wire.Conn{}
	for _, w := range n.workers {
		procs = append(procs, w)
		if w.conn != nil {
			conns = append(conns, w.conn)
		}
	}
	n.unlock()
	n.ln.Close()
	// A worker exits when it reads the end of its connection. What is still
	// queued for a busy one is of no use now, so nothing waits to send it;
	// a worker that does not exit in time is killed.
	for _, c := range conns {
		c.Abort()
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, w := range procs {
		select {
		case <-w.exited:
		case <-time.After(time.Until(deadline)):
		}
		select {
		case <-w.exited:
		default:
			n.mu.Lock()
			p := w.process
			n.unlock()
			if p != nil {
				_ = p.Kill()
			}
		}
	}
	n.wg.Wait()
	var serr error
	if n.shared != nil {
		serr = n.shared.Close()
	}
	return errors.Join(os.RemoveAll(n.dir), serr)
}
