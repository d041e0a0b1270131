package sched

import (
	"fmt"
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// NodeID names a node of a Cluster. Local is the driver's own machine; the
// caller numbers the others.
type NodeID int

// Local is the driver's own node.
const Local NodeID = 0

// nodeShift spaces the worker IDs of the nodes apart: node k's workers are
// numbered from k<<nodeShift + 1 on (IDs stay within 32 bits for the first
// 127 nodes).
const nodeShift = 24

// FirstWorker returns the first worker ID of node k.
func FirstWorker(k NodeID) WorkerID { return WorkerID(k)<<nodeShift + 1 }

// NodeOf returns the node of worker w.
func NodeOf(w WorkerID) NodeID { return NodeID(w >> nodeShift) }

// addDemand adds sign times r to what the queued tasks ask for.
func (c *Core[T]) addDemand(r *task.Resources, sign float64) {
	c.demand.CPU += sign * r.CPU
	c.demand.GPU += sign * r.GPU
	for k, v := range r.Custom {
		c.demand.Custom[k] += sign * v
	}
}

// headroom reports whether r fits what is free once the tasks queued now
// have what they ask for: a task placed here would not wait behind them.
func (c *Core[T]) headroom(r *task.Resources) bool {
	if r.CPU > c.avail.CPU-c.demand.CPU+eps || r.GPU > c.avail.GPU-c.demand.GPU+eps {
		return false
	}
	for k, v := range r.Custom {
		if v > c.avail.Custom[k]-c.demand.Custom[k]+eps {
			return false
		}
	}
	return true
}

// fitsTotal reports whether r fits the node when nothing else runs and
// the grant has grown to the node's capacity.
func (c *Core[T]) fitsTotal(r task.Resources) bool {
	if r.CPU > c.capacity.CPU+eps || r.GPU > c.capacity.GPU+eps {
		return false
	}
	for k, v := range r.Custom {
		if v > c.capacity.Custom[k]+eps {
			return false
		}
	}
	return true
}

// drain empties a core whose node is gone: every task it held (running,
// queued behind a worker, or waiting in a queue; in that order per worker)
// comes back as an Orphan effect, then the actors that held or waited for
// its resources as OrphanActor effects.
func (c *Core[T]) drain() {
	ws := slices.Sorted(func(yield func(WorkerID) bool) {
		for id := range c.pool {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ws {
		for _, it := range c.pool[id].tasks {
			c.emit(Effect[T]{Kind: Orphan, Worker: id, Task: it.t})
		}
	}
	for _, k := range c.shapes {
		q := c.queues[k]
		for q.len() > 0 {
			c.emit(Effect[T]{Kind: Orphan, Task: q.pop().t})
		}
	}
	actors := make([]ids.ActorID, 0, len(c.actors))
	for id := range c.actors {
		actors = append(actors, id)
	}
	slices.SortFunc(actors, func(a, b ids.ActorID) int { return slices.Compare(a[:], b[:]) })
	for _, id := range actors {
		c.emit(Effect[T]{Kind: OrphanActor, Actor: id})
	}
	c.closed = true
}

// Cluster is the scheduling core of a driver whose tasks may run on several
// nodes: one Core per node (its resources, queues and pool of workers),
// with the placement of tasks and actors between them. Tasks run on the
// local node while it has room, then on the first other node that has; when
// none has, they queue where the wait is shortest. Events about a worker go
// to its node's core (see NodeOf); every effect names its node.
//
// Its inputs come through one funnel, Step (step.go: one Event type per
// input), and its outputs through Effects; the other methods are
// questions: queries of its state, and the few inputs that answer at once
// (Admit, Lease, Grant, AddNode, Lender), each saying why.
//
// Like Core, a Cluster is a state machine with no I/O, not safe for
// concurrent use.
type Cluster[T any] struct {
	cores   map[NodeID]*Core[T]
	order   []NodeID // Local first, then by ID
	actorAt map[ids.ActorID]NodeID
	effects []Effect[T]
	closed  bool

	// Requests no node can hold: they wait for a node that can to join.
	waiting []item[T]
	actorQ  []waitingActor
	// gone is the capacity of the nodes removed (spread.go: Stalled).
	gone task.Resources
	// warned names the requests told they wait for a node (admit.go).
	warned map[string]bool
}

type waitingActor struct {
	id  ids.ActorID
	res task.Resources
}

// NewCluster returns a cluster core of one node, the local one, configured
// by cfg (whose Node is ignored).
func NewCluster[T any](cfg Config) *Cluster[T] {
	cl := &Cluster[T]{cores: map[NodeID]*Core[T]{}, actorAt: map[ids.ActorID]NodeID{}}
	cfg.Node = Local
	cl.add(Local, New[T](cfg))
	return cl
}

func (cl *Cluster[T]) add(id NodeID, c *Core[T]) {
	c.effects = nil
	c.sink = &cl.effects
	cl.cores[id] = c
	cl.order = append(cl.order, id)
	slices.Sort(cl.order)
}

// AddNode adds node id (not Local, not present) with total resources. Its
// pool starts empty and grows as tasks are placed there.
func (cl *Cluster[T]) AddNode(id NodeID, total task.Resources) error {
	return cl.AddNodeGrant(id, total, nil, total)
}

// AddNodeGrant adds node id (not Local, not present) whose resources are
// capacity, of which granted is this job's for now (see grant.go); gpus
// are the indices of granted's GPUs (nil: 0 up).
// It stays a method beside Step for its answer: a node that cannot be added
// (Local, or one present) is the caller's error to report.
func (cl *Cluster[T]) AddNodeGrant(id NodeID, granted task.Resources, gpus []int, capacity task.Resources) error {
	if id <= Local || cl.cores[id] != nil {
		return fmt.Errorf("sched: node %d exists already or is not a remote node", id)
	}
	c := New[T](Config{Total: granted, Capacity: capacity, Workers: 1, Node: id, GPUs: gpus})
	if cl.closed {
		c.Close()
	}
	cl.add(id, c)
	w, aq := cl.waiting, cl.actorQ
	cl.waiting, cl.actorQ = nil, nil
	for _, it := range w {
		cl.enqueue(it)
	}
	for _, a := range aq {
		cl.waitActor(a.id, a.res)
	}
	cl.spread()
	return nil
}

// removeNode drops node id (gone: its process or machine ended). What ran
// or waited there comes back as effects: the tasks as Orphan, for the
// caller to run again or fail (resubmitted with Submit, they go
// elsewhere), and the actors as OrphanActor, which the caller recreates
// (WaitActor) or fails.
func (cl *Cluster[T]) removeNode(id NodeID) {
	c := cl.cores[id]
	if c == nil || id == Local {
		return
	}
	from := len(cl.effects)
	c.drain()
	for _, e := range cl.effects[from:] {
		if e.Kind == OrphanActor {
			delete(cl.actorAt, e.Actor)
		}
	}
	cl.gone = cl.gone.Add(c.capacity)
	delete(cl.cores, id)
	cl.order = slices.DeleteFunc(cl.order, func(x NodeID) bool { return x == id })
}

// Nodes returns the nodes, Local first.
func (cl *Cluster[T]) Nodes() []NodeID { return slices.Clone(cl.order) }

// Node returns node id's core, for reading its state (Total, Available,
// Queued...), or nil. Events must go through the Cluster.
func (cl *Cluster[T]) Node(id NodeID) *Core[T] { return cl.cores[id] }

// place picks the node for a request: the first (Local first) with room
// beyond what is queued there, else the first whose grant can grow to
// hold it (growRoom), else the one that fits it whose queue is shortest
// for its CPUs; nil when no node can ever hold it.
func (cl *Cluster[T]) place(r *task.Resources) *Core[T] {
	for _, id := range cl.order {
		if c := cl.cores[id]; c.headroom(r) {
			return c
		}
	}
	for _, id := range cl.order { // a grant that can grow to hold it (spread.go)
		if c := cl.cores[id]; c.growRoom(r) {
			return c
		}
	}
	// The least loaded node that can ever hold it. A load is worked out
	// only where two nodes compete: a lone node (every task queued on one
	// machine) gets a million queued tasks without a walk of its queues
	// for each.
	var best *Core[T]
	bestLoad := -1.0 // best's load, once needed
	for _, id := range cl.order {
		c := cl.cores[id]
		if !c.fitsTotal(*r) {
			continue
		}
		if best == nil {
			best = c
			continue
		}
		if bestLoad < 0 {
			bestLoad = best.load()
		}
		if load := c.load(); load < bestLoad {
			best, bestLoad = c, load
		}
	}
	return best
}

// load is what place weighs nodes by: queued tasks and waiting actors per
// CPU.
func (c *Core[T]) load() float64 {
	return float64(c.Queued()+len(c.actorWait)) / max(c.total.CPU, 1)
}

// Feasible reports why a request for r by name can never be met by any node
// now in the cluster, or nil.
func (cl *Cluster[T]) Feasible(name string, r task.Resources) error {
	var first error
	for _, id := range cl.order {
		err := cl.cores[id].Feasible(name, r)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	if len(cl.order) > 1 {
		return fmt.Errorf("no node of the cluster (%d nodes) can hold it; on this machine: %w", len(cl.order), first)
	}
	return first
}

// submit queues t on the node place chooses (see Core.Submit). A request
// no node can hold waits until one that can joins (see Waiting).
func (cl *Cluster[T]) submit(t T, res *task.Resources, pipelined bool) {
	cl.enqueue(item[T]{t: t, res: res, pipe: pipelined})
}

// submitPacked is Core.SubmitPacked on the node place chooses.
func (cl *Cluster[T]) submitPacked(t T, res *task.Resources, depth int) {
	cl.enqueue(packed(t, res, depth))
}

func (cl *Cluster[T]) enqueue(p item[T]) {
	c := cl.place(p.res)
	if c == nil {
		cl.waiting = append(cl.waiting, p)
		return
	}
	c.submit(p)
}

// submitNear is Submit for a task whose large arguments live on node near
// (data locality): it goes there when that node has room beyond what is
// queued there, and where Submit would place it otherwise.
func (cl *Cluster[T]) submitNear(t T, res *task.Resources, pipelined bool, near NodeID) {
	if c := cl.cores[near]; c != nil && c.headroom(res) {
		c.Submit(t, res, pipelined)
		return
	}
	cl.submit(t, res, pipelined)
}

// waitActor asks for actor id's resources on the node place chooses; an
// actor no node can hold waits until one that can joins.
func (cl *Cluster[T]) waitActor(id ids.ActorID, res task.Resources) {
	if _, dup := cl.actorAt[id]; dup {
		return
	}
	if slices.ContainsFunc(cl.actorQ, func(a waitingActor) bool { return a.id == id }) {
		return
	}
	c := cl.place(&res)
	if c == nil {
		cl.actorQ = append(cl.actorQ, waitingActor{id, res})
		return
	}
	cl.actorAt[id] = c.node
	c.WaitActor(id, res)
}

// Waiting returns the requests no node of the cluster can hold, which wait
// for one that can to join.
func (cl *Cluster[T]) Waiting() []task.Resources {
	var out []task.Resources
	for _, it := range cl.waiting {
		out = append(out, it.res.Clone())
	}
	for _, a := range cl.actorQ {
		out = append(out, a.res.Clone())
	}
	return out
}

// ActorNode returns the node actor id was placed on.
func (cl *Cluster[T]) ActorNode(id ids.ActorID) (NodeID, bool) {
	n, ok := cl.actorAt[id]
	return n, ok
}

// actorGone releases actor id's resources on its node.
func (cl *Cluster[T]) actorGone(id ids.ActorID) {
	n, ok := cl.actorAt[id]
	if !ok {
		cl.actorQ = slices.DeleteFunc(cl.actorQ, func(a waitingActor) bool { return a.id == id })
		return
	}
	delete(cl.actorAt, id)
	if c := cl.cores[n]; c != nil {
		c.ActorGone(id)
		cl.spread()
	}
}

// restartActor: see Core.RestartActor. The actor restarts on the node that
// holds its resources; one whose node is gone (RemoveNode handed it back)
// is placed anew, as WaitActor.
func (cl *Cluster[T]) restartActor(id ids.ActorID, res task.Resources) {
	if n, ok := cl.actorAt[id]; ok {
		if c := cl.cores[n]; c != nil && c.actors[id] != nil {
			c.RestartActor(id, res)
			return
		}
	}
	cl.waitActor(id, res)
}

// on returns the core of worker w's node, or nil once the node is gone.
func (cl *Cluster[T]) on(w WorkerID) *Core[T] { return cl.cores[NodeOf(w)] }

// workerReady: see Core.WorkerReady.
func (cl *Cluster[T]) workerReady(w WorkerID) {
	if c := cl.on(w); c != nil {
		c.WorkerReady(w)
	}
}

// Running: see Core.Running.
func (cl *Cluster[T]) Running(w WorkerID) (T, bool) {
	if c := cl.on(w); c != nil {
		return c.Running(w)
	}
	var zero T
	return zero, false
}

// Epoch: see Core.Epoch.
func (cl *Cluster[T]) Epoch(w WorkerID) uint64 {
	if c := cl.on(w); c != nil {
		return c.Epoch(w)
	}
	return 0
}

// lending: see Core.lending.
func (cl *Cluster[T]) lending(w WorkerID) bool {
	c := cl.on(w)
	return c != nil && c.lending(w)
}

// taskDone: see Core.TaskDone.
func (cl *Cluster[T]) taskDone(w WorkerID, retiring bool) {
	if c := cl.on(w); c != nil {
		c.TaskDone(w, retiring)
		cl.spread()
	}
}

// block: see Core.Block.
func (cl *Cluster[T]) block(w WorkerID, epoch uint64) {
	if c := cl.on(w); c != nil {
		c.Block(w, epoch)
	}
}

// unblock: see Core.Unblock.
func (cl *Cluster[T]) unblock(w WorkerID, epoch uint64) bool {
	if c := cl.on(w); c != nil {
		return c.Unblock(w, epoch)
	}
	return true
}

// giveBack: see Core.GiveBack.
func (cl *Cluster[T]) giveBack(w WorkerID, back func(T) bool) {
	if c := cl.on(w); c != nil {
		c.GiveBack(w, back)
	}
}

// withdraw: see Core.Withdraw.
func (cl *Cluster[T]) withdraw(w WorkerID, which func(T) bool) {
	if c := cl.on(w); c != nil {
		c.Withdraw(w, which)
	}
}

// workerDied: see Core.WorkerDied.
func (cl *Cluster[T]) workerDied(w WorkerID) {
	if c := cl.on(w); c != nil {
		c.WorkerDied(w)
		cl.spread()
	}
}

// spawnFailed: see Core.SpawnFailed; it concerns the local node, whose
// workers are started by the driver itself.
func (cl *Cluster[T]) spawnFailed() {
	from := len(cl.effects)
	cl.cores[Local].SpawnFailed()
	for _, e := range cl.effects[from:] {
		if e.Kind == RefuseActor {
			delete(cl.actorAt, e.Actor)
		}
	}
	if len(cl.order) == 1 { // no other node: what waits for one fails too
		for _, it := range cl.waiting {
			cl.effects = append(cl.effects, Effect[T]{Kind: Refuse, Task: it.t})
		}
		for _, a := range cl.actorQ {
			cl.effects = append(cl.effects, Effect[T]{Kind: RefuseActor, Actor: a.id})
		}
		cl.waiting, cl.actorQ = nil, nil
	}
}

// Effects: see Core.Effects; every node's effects, in order.
func (cl *Cluster[T]) Effects() []Effect[T] {
	e := cl.effects
	cl.effects = nil
	return e
}

// Pending reports whether effects wait to be taken.
func (cl *Cluster[T]) Pending() bool { return len(cl.effects) > 0 }

// boot starts the local node's pool.
func (cl *Cluster[T]) boot() { cl.cores[Local].Boot() }

// close stops every core.
func (cl *Cluster[T]) close() {
	cl.closed = true
	for _, c := range cl.cores {
		c.Close()
	}
}

// Total returns the resources of all nodes together.
func (cl *Cluster[T]) Total() task.Resources { return cl.sum((*Core[T]).Total) }

// Available returns what all nodes have free together.
func (cl *Cluster[T]) Available() task.Resources { return cl.sum((*Core[T]).Available) }

func (cl *Cluster[T]) sum(f func(*Core[T]) task.Resources) task.Resources {
	out := task.Resources{Custom: map[string]float64{}}
	for _, id := range cl.order {
		r := f(cl.cores[id])
		out.CPU += r.CPU
		out.GPU += r.GPU
		for k, v := range r.Custom {
			out.Custom[k] += v
		}
	}
	return out
}

// Starting returns how many pool workers of the local node are starting.
func (cl *Cluster[T]) Starting() int { return cl.cores[Local].Starting() }

// Queued returns how many ready tasks wait for a worker, on all nodes or
// for a node to join.
func (cl *Cluster[T]) Queued() int {
	n := len(cl.waiting)
	for _, c := range cl.cores {
		n += c.Queued()
	}
	return n
}

// Sent: see Core.Sent.
func (cl *Cluster[T]) Sent(w WorkerID) []T {
	if c := cl.on(w); c != nil {
		return c.Sent(w)
	}
	return nil
}

// EachQueued: see Core.EachQueued; node by node, Local first.
func (cl *Cluster[T]) EachQueued(fn func(T)) {
	for _, id := range cl.order {
		cl.cores[id].EachQueued(fn)
	}
	for _, it := range cl.waiting {
		fn(it.t)
	}
}

// Check verifies every core's invariants and that each actor is filed
// under a node that holds it.
func (cl *Cluster[T]) Check() error {
	for _, id := range cl.order {
		c := cl.cores[id]
		if err := c.Check(); err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		if err := c.checkDemand(); err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
	}
	for a, n := range cl.actorAt {
		if c := cl.cores[n]; c == nil || c.actors[a] == nil {
			return fmt.Errorf("actor %s filed under node %d, which does not hold it", a, n)
		}
	}
	return nil
}

// checkDemand verifies that the queued tasks ask for what demand says.
func (c *Core[T]) checkDemand() error {
	d := task.Resources{Custom: map[string]float64{}}
	for _, k := range c.shapes {
		q := c.queues[k]
		q.each(func(it item[T]) bool {
			d.CPU += it.res.CPU
			d.GPU += it.res.GPU
			for k, v := range it.res.Custom {
				d.Custom[k] += v
			}
			return true
		})
	}
	if !near(d.CPU, c.demand.CPU) || !near(d.GPU, c.demand.GPU) {
		return fmt.Errorf("queued tasks ask for CPU %g GPU %g, counted %g and %g", d.CPU, d.GPU, c.demand.CPU, c.demand.GPU)
	}
	for k, v := range c.demand.Custom {
		if !near(v, d.Custom[k]) {
			return fmt.Errorf("queued tasks ask for %s=%g, counted %g", k, d.Custom[k], v)
		}
	}
	return nil
}
