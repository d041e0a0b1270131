// Package sched is the node's scheduling core: a single-threaded state
// machine with no I/O, in the style of etcd raft's RawNode.
//
// The caller feeds it events (a task is ready to run, a worker connected,
// finished a task, blocked in Get, died; an actor waits for resources) and
// carries out the effects it takes with Effects (run this task on that
// worker, start a worker, tell one to exit, hand a blocked worker its CPU
// back). The node drives a Cluster, one Core per node, through one funnel,
// Cluster.Step, with one Event type per input (step.go). The core never
// blocks and never touches a socket or a process, so its tests step it
// deterministically (see sched_test.go, and step_test.go for the Cluster).
//
// The core owns the node's resources (CPUs, GPUs and custom resources), the
// queues of ready tasks, one per resource shape, and the pool of worker
// processes that run normal tasks. Actors' method calls are ordered per
// actor by the caller; the core only reserves an actor's resources.
//
// Waits, beside it, matches Get and Wait requests with the objects they wait
// for and says when each is answered; a blocked worker's request lends its
// CPUs through the core (waits.go).
package sched

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// WorkerID names a worker process; the core numbers them.
type WorkerID int

// Kind says what an Effect asks the caller to do.
type Kind uint8

// The effects.
const (
	// Run sends Task to pool Worker, which runs it after the tasks sent
	// before it. GPUs are the devices the task may use.
	Run Kind = iota + 1
	// Spawn starts pool worker Worker; the caller reports WorkerReady
	// once it connects, or WorkerDied.
	Spawn
	// StartActor starts worker Worker for Actor, whose resources
	// (GPUs included) are now reserved.
	StartActor
	// Exit tells idle pool Worker to exit: the pool has more than it needs.
	Exit
	// Recall asks blocked Worker to give back the tasks queued behind the
	// one it runs (they may be what it waits for); it answers GiveBack.
	Recall
	// Resume lets Worker, blocked in Get with its CPUs lent out, go on:
	// its CPUs are its own again. The caller answers the requests it parked.
	Resume
	// Orphan: Task was running on Worker, which died (WorkerDied), or it
	// ran or queued on Node, which is gone (RemoveNode). The caller fails
	// it, or runs it again (Submit places it elsewhere).
	Orphan
	// OrphanActor: Actor held or waited for the resources of Node, which
	// is gone (RemoveNode). The caller recreates it (WaitActor) or fails it.
	OrphanActor
	// Refuse: no worker can start (SpawnFailed) and Task waited for one;
	// the caller fails it.
	Refuse
	// RefuseActor: the same for Actor, which waited for resources.
	RefuseActor
)

// String names the effect kind, for logs and test failures.
func (k Kind) String() string {
	switch k {
	case Run:
		return "run"
	case Spawn:
		return "spawn"
	case StartActor:
		return "start-actor"
	case Exit:
		return "exit"
	case Recall:
		return "recall"
	case Resume:
		return "resume"
	case Orphan:
		return "orphan"
	case OrphanActor:
		return "orphan-actor"
	case Refuse:
		return "refuse"
	case RefuseActor:
		return "refuse-actor"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Effect is one thing the caller must do, in the order returned.
type Effect[T any] struct {
	Kind   Kind
	Node   NodeID // where: the core's node (Spawn and StartActor start the process there)
	Worker WorkerID
	Task   T           // Run
	GPUs   []int       // Run, StartActor
	Actor  ids.ActorID // StartActor
	// Reused (StartActor): Worker is a started, idle pool worker, now out
	// of the pool, that is to host Actor instead of a new process.
	Reused bool
}

// Config configures a Core.
type Config struct {
	Total   task.Resources // what the node has
	Workers int            // pool workers kept alive; at least ceil(Total.CPU)
	// Node names the node in effects; its workers are numbered from
	// FirstWorker(Node) on, so the cores of a Cluster never share an ID.
	Node NodeID
	// Capacity is the most Total can grow to (Grow): on a cluster, Total
	// is the driver's grant on the node and Capacity the node's resources
	// (grant.go). Zero: Total.
	Capacity task.Resources
	// GPUs are the indices of Total's GPUs: on a cluster, those the
	// node's daemon granted (it owns them, so drivers sharing a node never
	// hand out the same one). Nil: 0 up to Total.GPU.
	GPUs []int
	// PackWorkers bounds the workers running packed tasks (SubmitPacked)
	// at once: the processors of the machine the workers run on. More
	// workers cannot run short tasks any sooner than that many, and each
	// one woken costs more CPU than such tasks; past the bound a packed
	// task waits for room behind one of them. Zero: no bound.
	PackWorkers int
}

// MaxPipeline bounds the tasks queued at one worker, so a long task holds
// few others back.
const MaxPipeline = 16

// MaxPack bounds the tasks queued at one worker by SubmitPacked, whose
// caller knows them to be short: the depth it asks for (its budget of
// queued work over a task's run time) bounds the latency, and this the
// worker's queue.
const MaxPack = 255

// MaxPool bounds the pool's processes, whatever the tasks ask for.
const MaxPool = 256

// Core is the scheduling state machine. T is the caller's handle for a
// task. A Core is not safe for concurrent use: the caller serialises it.
type Core[T any] struct {
	total, avail task.Resources
	gpuFree      []int
	returnedGPUs []int // given back (Reclaim) since the last View
	workers      int   // configured pool size

	queues map[string]*fifo[T]
	shapes []string // keys of queues, in creation order

	pool     map[WorkerID]*worker[T] // pool workers, starting or connected
	order    []WorkerID              // connected pool workers, in connection order
	idle     []WorkerID              // a stack
	starting int
	lent     int        // workers whose CPUs are lent out while blocked
	resumeQ  []WorkerID // unblocked workers waiting for their CPUs

	actors    map[ids.ActorID]*actor
	actorWait []ids.ActorID

	next    WorkerID
	noSpawn bool // workers cannot start: no more Spawn effects
	closed  bool
	effects []Effect[T]
	sink    *[]Effect[T] // where effects go: &effects, or a Cluster's list

	node   NodeID
	demand task.Resources // what the queued tasks ask for, in all

	// The grant (grant.go): total is what is granted, capacity the most
	// it can grow to, owed what a reclaim still waits for (paid as
	// resources are freed), returned what was given back and not yet
	// reported.
	capacity, owed, returned task.Resources
	owing                    bool

	packWorkers int // Config.PackWorkers
}

// item is a task with the resources it needs.
type item[T any] struct {
	t    T
	res  *task.Resources
	pipe bool // may queue behind a busy worker
	// pack > 0: a short task (SubmitPacked), queued behind a busy worker
	// of its shape holding fewer than pack tasks before an idle worker is
	// woken for it.
	pack uint8
}

type worker[T any] struct {
	id        WorkerID
	connected bool
	tasks     []item[T] // sent, in order; the first is running
	held      task.Resources
	gpus      []int
	shape     string
	blocked   int    // outstanding blocking requests of the running task
	epoch     uint64 // counts finished tasks
	lent      bool   // CPUs lent out while blocked
	parked    bool   // in resumeQ
	recalled  bool
	retiring  bool
	gpuUsed   bool // it held a GPU once: it never hosts an actor (reuse.go)
	leased    bool // its running task is a lease (lease.go): nothing queues behind it
}

type actor struct {
	res     task.Resources
	gpus    []int
	waiting bool
	holding bool
}

// New returns a core with every resource free and no workers: call Boot to
// start the pool.
func New[T any](cfg Config) *Core[T] {
	c := &Core[T]{
		total:       cfg.Total.Clone(),
		avail:       cfg.Total.Clone(),
		workers:     max(cfg.Workers, 1),
		queues:      map[string]*fifo[T]{},
		pool:        map[WorkerID]*worker[T]{},
		actors:      map[ids.ActorID]*actor{},
		node:        cfg.Node,
		next:        FirstWorker(cfg.Node) - 1,
		packWorkers: max(cfg.PackWorkers, 0),
		demand:      task.Resources{Custom: map[string]float64{}},
	}
	c.capacity = cfg.Capacity.Max(c.total)
	c.sink = &c.effects
	for i := 0; i < int(cfg.Total.GPU); i++ {
		c.gpuFree = append(c.gpuFree, i)
	}
	if cfg.GPUs != nil { // the count is the indices'
		c.gpuFree = slices.Compact(slices.Sorted(slices.Values(cfg.GPUs)))
		c.total.GPU, c.avail.GPU = float64(len(c.gpuFree)), float64(len(c.gpuFree))
	}
	return c
}

// Effects returns the effects of the events since the last call, in order,
// and forgets them.
func (c *Core[T]) Effects() []Effect[T] {
	e := *c.sink
	*c.sink = nil
	return e
}

// Pending reports whether effects wait to be taken.
func (c *Core[T]) Pending() bool { return len(*c.sink) > 0 }

func (c *Core[T]) emit(e Effect[T]) {
	e.Node = c.node
	*c.sink = append(*c.sink, e)
}

// Total returns the node's resources.
func (c *Core[T]) Total() task.Resources { return c.total.Clone() }

// Available returns the resources not reserved now.
func (c *Core[T]) Available() task.Resources { return c.avail.Clone() }

// Starting returns how many pool workers were spawned but have not connected.
func (c *Core[T]) Starting() int { return c.starting }

// Queued returns how many ready tasks wait for a worker.
func (c *Core[T]) Queued() int {
	n := 0
	for _, q := range c.queues {
		n += q.len()
	}
	return n
}

// poolSize is the number of pool workers kept alive when no task is blocked
// and no fractional-CPU task is queued.
func (c *Core[T]) poolSize() int { return max(c.workers, int(math.Ceil(c.total.CPU))) }

// Feasible reports why a request for r by name can never be met on this
// node, or nil. It goes by the node's capacity: a request that fits it
// waits for the grant to grow.
func (c *Core[T]) Feasible(name string, r task.Resources) error {
	check := func(res string, want, have float64) error {
		if want > have {
			return fmt.Errorf("%s asks for %s=%g but this node has %s=%g in all, so it can never run; lower the request or start gray with more (gray.Options NumCPUs, NumGPUs, Resources)", name, res, want, res, have)
		}
		return nil
	}
	if err := check("CPU", r.CPU, c.capacity.CPU); err != nil {
		return err
	}
	if err := check("GPU", r.GPU, c.capacity.GPU); err != nil {
		return err
	}
	if r.GPU != math.Trunc(r.GPU) {
		return fmt.Errorf("%s asks for GPU=%g: GPU requests must be whole numbers", name, r.GPU)
	}
	if len(r.Custom) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(r.Custom)) { // the first by name, for a stable message
		if err := check(k, r.Custom[k], c.capacity.Custom[k]); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the core: events after it change nothing and emit nothing.
func (c *Core[T]) Close() { c.closed = true }

// Boot starts the pool: Workers spawns.
func (c *Core[T]) Boot() {
	for range c.workers {
		c.spawn()
	}
}

// Submit queues t, a normal task whose arguments all exist and which needs
// res (kept by reference: it must not change). A pipelined task may wait
// behind a busy worker when no resources are free.
func (c *Core[T]) Submit(t T, res *task.Resources, pipelined bool) {
	c.submit(item[T]{t: t, res: res, pipe: pipelined})
}

// SubmitPacked queues t, a task the shell expects to be short, like a
// pipelined Submit, but packed onto workers that are already running:
// it goes behind a busy worker of its shape that holds fewer than depth
// tasks (at most MaxPack) before an idle worker is woken for it. A
// burst of tiny tasks then runs on as few workers as keep up with it,
// instead of waking every idle worker for a task or two each (each
// wake-up costing more than such a task).
func (c *Core[T]) SubmitPacked(t T, res *task.Resources, depth int) {
	c.submit(packed(t, res, depth))
}

// packed is the queue item of SubmitPacked, its depth clamped to
// 0..MaxPack.
func packed[T any](t T, res *task.Resources, depth int) item[T] {
	return item[T]{t: t, res: res, pipe: true, pack: uint8(min(max(depth, 0), MaxPack))}
}

func (c *Core[T]) submit(p item[T]) {
	res := p.res
	k := shapeKey(res)
	q := c.queues[k]
	if q == nil {
		q = &fifo[T]{}
		c.queues[k] = q
		c.shapes = append(c.shapes, k)
	}
	q.push(p)
	c.addDemand(res, 1)
	c.schedule()
}

// WaitActor asks for actor id's resources; StartActor follows once they
// are free.
func (c *Core[T]) WaitActor(id ids.ActorID, res task.Resources) {
	if _, dup := c.actors[id]; dup {
		return
	}
	c.actors[id] = &actor{res: res, waiting: true}
	c.actorWait = append(c.actorWait, id)
	c.schedule()
}

// ActorGone releases actor id's resources, or stops its wait for them.
func (c *Core[T]) ActorGone(id ids.ActorID) {
	a := c.actors[id]
	if a == nil {
		return
	}
	delete(c.actors, id)
	if a.waiting {
		c.actorWait = slices.DeleteFunc(c.actorWait, func(x ids.ActorID) bool { return x == id })
	}
	if a.holding {
		c.release(&a.res, true, a.gpus)
	}
	c.schedule()
}

// WorkerReady records that pool worker w connected: it is idle.
func (c *Core[T]) WorkerReady(w WorkerID) {
	x := c.pool[w]
	if x == nil || x.connected {
		return
	}
	x.connected = true
	c.starting--
	c.order = append(c.order, w)
	c.idle = append(c.idle, w)
	c.schedule()
}

// Running returns the task pool worker w runs now.
func (c *Core[T]) Running(w WorkerID) (T, bool) {
	if x := c.pool[w]; x != nil && len(x.tasks) > 0 {
		return x.tasks[0].t, true
	}
	var zero T
	return zero, false
}

// Epoch returns a number that changes each time pool worker w finishes a
// task: a blocking request stamped with it (see Block) does not count
// against the next task.
func (c *Core[T]) Epoch(w WorkerID) uint64 {
	if x := c.pool[w]; x != nil {
		return x.epoch
	}
	return 0
}

// lending reports whether pool worker w's CPUs are lent out: its running
// task waits in Get or Wait, or waits for them to be free again.
func (c *Core[T]) lending(w WorkerID) bool {
	x := c.pool[w]
	return x != nil && x.lent
}

// TaskDone records that pool worker w finished its running task (see
// Running). A retiring worker takes no more tasks (it reached its task's
// MaxCalls) and exits by itself.
func (c *Core[T]) TaskDone(w WorkerID, retiring bool) {
	x := c.pool[w]
	if x == nil || len(x.tasks) == 0 {
		return
	}
	var zero item[T]
	x.tasks[0] = zero
	x.tasks = x.tasks[1:]
	lent := x.lent // a Get outlived its task: the CPU is still lent out
	x.blocked = 0
	x.epoch++
	if retiring {
		x.retiring = true
	}
	if lent && len(x.tasks) > 0 {
		// The worker goes on with the next task it holds (one it has not
		// given back yet after the Recall): it takes its CPUs back now if
		// they are free, else it waits for them in the books like a
		// worker resuming from Get.
		need := task.Resources{CPU: x.held.CPU}
		if !x.parked && c.fits(&need) {
			c.avail.CPU -= x.held.CPU
			x.lent = false
			c.lent--
		} else if !x.parked {
			x.parked = true
			c.resumeQ = append(c.resumeQ, w)
		}
	}
	if lent && len(x.tasks) == 0 {
		x.lent = false
		c.lent--
		c.unpark(x)
	}
	if len(x.tasks) == 0 {
		c.release(&x.held, !lent, x.gpus)
		x.held, x.gpus, x.shape, x.leased = task.Resources{}, nil, "", false
		x.tasks = nil
		if !x.retiring && c.surplus() && c.Queued() == 0 {
			// A spare started to cover blocked workers or a burst of
			// fractional-CPU tasks, now idle: reap it so the pool
			// returns to its size.
			x.retiring = true
			c.emit(Effect[T]{Kind: Exit, Worker: w})
		}
		if !x.retiring {
			c.idle = append(c.idle, w)
		}
	}
	c.schedule()
}

// Block records that the running task of pool worker w waits in a Get or
// Wait, stamped with epoch (see Epoch). The first such request lends the
// worker's CPUs to other tasks (its own children, typically), so nested
// tasks cannot deadlock; tasks queued behind it are recalled.
func (c *Core[T]) Block(w WorkerID, epoch uint64) {
	x := c.pool[w]
	if x == nil || epoch != x.epoch || len(x.tasks) == 0 {
		return
	}
	x.blocked++
	if x.blocked == 1 && !x.lent {
		x.lent = true
		c.lent++
		c.avail.CPU += x.held.CPU
		if len(x.tasks) > 1 && !x.recalled {
			x.recalled = true
			c.emit(Effect[T]{Kind: Recall, Worker: w})
		}
		c.schedule()
	}
}

// Unblock records that a request stamped epoch of pool worker w's running
// task was answered. It reports whether the caller may send the answer now;
// if not, the worker waits for its CPUs and a Resume effect follows.
func (c *Core[T]) Unblock(w WorkerID, epoch uint64) bool {
	x := c.pool[w]
	if x == nil || epoch != x.epoch || x.blocked == 0 {
		return true
	}
	x.blocked--
	if x.blocked > 0 || !x.lent {
		return !x.parked
	}
	if !x.parked {
		x.parked = true
		c.resumeQ = append(c.resumeQ, w)
	}
	c.schedule()
	return false
}

// GiveBack records that worker w returned the queued tasks for which back
// is true (after a Recall): they go to the front of their queues. A worker
// that was not blocked may give back its first task too (recalled by a
// reclaim between two tasks, it had started none): it is then idle, and
// what it held is free.
func (c *Core[T]) GiveBack(w WorkerID, back func(T) bool) {
	x := c.pool[w]
	if x == nil {
		return
	}
	x.recalled = false
	var ps []item[T]
	keep := x.tasks[:0]
	for i, it := range x.tasks {
		if (i > 0 || x.blocked == 0 && !x.lent) && back(it.t) {
			ps = append(ps, it)
		} else {
			keep = append(keep, it)
		}
	}
	x.tasks = keep
	if len(keep) == 0 && len(ps) > 0 {
		c.release(&x.held, true, x.gpus)
		x.held, x.gpus, x.shape = task.Resources{}, nil, ""
		x.tasks = nil
		if !x.retiring {
			c.idle = append(c.idle, w)
		}
	}
	c.requeue(ps)
	c.schedule()
}

// Withdraw takes back the tasks for which which is true among those
// pipelined behind the running task of pool worker w, which the caller
// has not sent to it (a task whose argument was lost, say): they leave the
// core, as if never submitted, for the caller to submit again or fail.
func (c *Core[T]) Withdraw(w WorkerID, which func(T) bool) {
	x := c.pool[w]
	if x == nil {
		return
	}
	keep := x.tasks[:0]
	for i, it := range x.tasks {
		if i == 0 || !which(it.t) {
			keep = append(keep, it)
		}
	}
	clear(x.tasks[len(keep):])
	x.tasks = keep
}

// WorkerDied records the end of pool worker w (connected or not). The
// task w was running comes back as an Orphan effect, which the caller
// fails or runs again; those queued behind it never started and run
// elsewhere.
func (c *Core[T]) WorkerDied(w WorkerID) {
	x := c.pool[w]
	if x == nil {
		return
	}
	delete(c.pool, w)
	if !x.connected {
		c.starting--
	} else {
		c.order = slices.DeleteFunc(c.order, func(y WorkerID) bool { return y == w })
		c.idle = slices.DeleteFunc(c.idle, func(y WorkerID) bool { return y == w })
	}
	c.unpark(x)
	if len(x.tasks) > 0 {
		c.emit(Effect[T]{Kind: Orphan, Worker: w, Task: x.tasks[0].t})
		c.release(&x.held, !x.lent, x.gpus)
		if x.lent {
			c.lent--
		}
		c.requeue(x.tasks[1:])
		x.tasks = nil
	}
	// Replace the dead worker so the pool keeps its size.
	if c.alive()+c.starting < c.workers {
		c.spawn()
	}
	c.schedule()
}

// SpawnFailed records that workers cannot be started at all. No more
// Spawn effects follow; the queued tasks and the actors waiting for
// resources come back as Refuse and RefuseActor effects, for the caller
// to fail.
func (c *Core[T]) SpawnFailed() {
	c.noSpawn = true
	for _, k := range c.shapes {
		q := c.queues[k]
		for q.len() > 0 {
			it := q.pop()
			c.addDemand(it.res, -1)
			c.emit(Effect[T]{Kind: Refuse, Task: it.t})
		}
	}
	for _, id := range c.actorWait {
		delete(c.actors, id)
		c.emit(Effect[T]{Kind: RefuseActor, Actor: id})
	}
	c.actorWait = nil
}

func (c *Core[T]) unpark(x *worker[T]) {
	if x.parked {
		x.parked = false
		c.resumeQ = slices.DeleteFunc(c.resumeQ, func(y WorkerID) bool { return y == x.id })
	}
}

// alive counts the connected pool workers that take tasks.
func (c *Core[T]) alive() int {
	n := 0
	for _, w := range c.order {
		if !c.pool[w].retiring {
			n++
		}
	}
	return n
}

// surplus reports whether more pool workers are alive than the pool's size
// plus those blocked in Get (whose CPUs are lent out).
func (c *Core[T]) surplus() bool { return c.alive() > c.poolSize()+c.lent }

func (c *Core[T]) spawn() WorkerID {
	c.next++
	if c.noSpawn {
		return c.next
	}
	c.pool[c.next] = &worker[T]{id: c.next}
	c.starting++
	c.emit(Effect[T]{Kind: Spawn, Worker: c.next})
	return c.next
}

// requeue puts tasks given back (or never started by a worker that died)
// at the front of their queues, in order.
func (c *Core[T]) requeue(ps []item[T]) {
	if len(ps) == 0 {
		return
	}
	byShape := map[string][]item[T]{}
	var order []string
	for _, p := range ps {
		k := shapeKey(p.res)
		if _, ok := byShape[k]; !ok {
			order = append(order, k)
		}
		byShape[k] = append(byShape[k], p)
	}
	for _, k := range order {
		q := c.queues[k]
		if q == nil {
			q = &fifo[T]{}
			c.queues[k] = q
			c.shapes = append(c.shapes, k)
		}
		q.pushFront(byShape[k])
		for _, p := range byShape[k] {
			c.addDemand(p.res, 1)
		}
	}
}

// Check verifies the core's invariants and returns the first broken one:
// no resource oversubscribed or lost (what is free plus what workers and
// actors hold is what the node has), each GPU in one place, the counts of
// starting and lending workers true, idle workers without tasks, parked
// workers lending their CPUs. Tests call it after every event.
func (c *Core[T]) Check() error {
	if c.avail.CPU < -eps {
		return fmt.Errorf("CPUs oversubscribed: %g free", c.avail.CPU)
	}
	if c.avail.GPU < -eps {
		return fmt.Errorf("GPUs oversubscribed: %g free", c.avail.GPU)
	}
	for k, v := range c.avail.Custom {
		if v < -eps {
			return fmt.Errorf("%s oversubscribed: %g free", k, v)
		}
	}
	cpu, gpu := c.avail.CPU, c.avail.GPU
	custom := maps.Clone(c.avail.Custom)
	gpus := append([]int(nil), c.gpuFree...)
	starting, lent := 0, 0
	for id, w := range c.pool {
		if w.id != id {
			return fmt.Errorf("worker %d filed under %d", w.id, id)
		}
		if !w.connected {
			starting++
			if len(w.tasks) > 0 {
				return fmt.Errorf("worker %d has tasks before it connected", id)
			}
		}
		if len(w.tasks) > MaxPack {
			return fmt.Errorf("worker %d has %d tasks, more than %d", id, len(w.tasks), MaxPack)
		}
		if len(w.tasks) == 0 {
			if w.lent || w.blocked > 0 || w.held.CPU != 0 || len(w.gpus) > 0 {
				return fmt.Errorf("worker %d holds resources or blocks without a task", id)
			}
			continue
		}
		if w.lent {
			lent++
		} else {
			cpu += w.held.CPU
		}
		if w.parked && !w.lent {
			return fmt.Errorf("worker %d waits for CPUs it did not lend", id)
		}
		gpu += w.held.GPU
		for k, v := range w.held.Custom {
			custom[k] += v
		}
		gpus = append(gpus, w.gpus...)
	}
	for _, id := range c.idle {
		if w := c.pool[id]; w != nil && len(w.tasks) > 0 && !w.retiring {
			return fmt.Errorf("idle worker %d has %d tasks", id, len(w.tasks))
		}
	}
	for _, a := range c.actors {
		if a.holding {
			cpu += a.res.CPU
			gpu += a.res.GPU
			for k, v := range a.res.Custom {
				custom[k] += v
			}
			gpus = append(gpus, a.gpus...)
		}
	}
	if starting != c.starting {
		return fmt.Errorf("%d workers starting, counted %d", starting, c.starting)
	}
	if lent != c.lent {
		return fmt.Errorf("%d workers lend their CPUs, counted %d", lent, c.lent)
	}
	if !near(cpu, c.total.CPU) || !near(gpu, c.total.GPU) {
		return fmt.Errorf("CPU %g and GPU %g accounted for, the node has %g and %g", cpu, gpu, c.total.CPU, c.total.GPU)
	}
	for k, v := range c.total.Custom {
		if !near(custom[k], v) {
			return fmt.Errorf("%s=%g accounted for, the node has %g", k, custom[k], v)
		}
	}
	slices.Sort(gpus)
	for i, g := range gpus {
		if g < 0 || i > 0 && g == gpus[i-1] {
			return fmt.Errorf("GPUs %v: lost or handed out twice", gpus)
		}
	}
	if len(gpus) != int(c.total.GPU) {
		return fmt.Errorf("GPUs %v accounted for, the node has %g", gpus, c.total.GPU)
	}
	if err := c.checkGrant(); err != nil {
		return err
	}
	return c.checkDemand()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
