package sched

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Event is one input of Cluster.Step: the types below. Each names the
// Core method it comes to on the node concerned; what follows from it
// (a task to run, a worker to start, a task orphaned...) is an Effect,
// read with Effects, never a return value.
//
// A few inputs stay methods because the shell needs an answer at once, as
// raft's Node keeps Status beside Step: Admit (may this request queue?),
// Lease (which worker, if any?), Grant (the node's grant, read and
// reported), AddNode and AddNodeGrant (could the node be added?), and
// Lender's Unblock (are the worker's CPUs back?).
type Event interface{ event() }

// Submitted: task Task, which needs Res, is ready to run; it queues on the
// node placement chooses (Core.Submit). Pipelined lets it go to a busy
// worker's pipe.
type Submitted[T any] struct {
	Task      T
	Res       *task.Resources
	Pipelined bool
}

// SubmittedPacked: a short task, packed Depth deep on one worker
// (Core.SubmitPacked).
type SubmittedPacked[T any] struct {
	Task  T
	Res   *task.Resources
	Depth int
}

// SubmittedNear: as Submitted, for a task whose large arguments live on
// node Near: it runs there when Near has room now, else as Submitted.
type SubmittedNear[T any] struct {
	Task      T
	Res       *task.Resources
	Pipelined bool
	Near      NodeID
}

// ActorWaits: actor ID asks for Res on the node placement chooses
// (Core.WaitActor); StartActor follows when a worker holds them.
type ActorWaits struct {
	ID  ids.ActorID
	Res task.Resources
}

// ActorGone: actor ID ended; its node frees its resources.
type ActorGone struct{ ID ids.ActorID }

// ActorRestart: actor ID restarts, with Res, on the node that held it
// (Core.RestartActor).
type ActorRestart struct {
	ID  ids.ActorID
	Res task.Resources
}

// WorkerReady: worker W connected (Core.WorkerReady).
type WorkerReady struct{ W WorkerID }

// WorkerDied: worker W's process ended; what it ran comes back as Orphan
// and OrphanActor effects (Core.WorkerDied).
type WorkerDied struct{ W WorkerID }

// SpawnFailed: a local worker could not start (Core.SpawnFailed). With no
// other node, what waits for a node is refused too.
type SpawnFailed struct{}

// TaskDone: worker W finished its oldest task; Retiring: it exits next
// (Core.TaskDone).
type TaskDone struct {
	W        WorkerID
	Retiring bool
}

// Blocked: worker W's task, in Epoch, waits in a Get: its CPUs are lent
// (Core.Block).
type Blocked struct {
	W     WorkerID
	Epoch uint64
}

// Unblocked: worker W's task, in Epoch, goes on (Core.Unblock). The shell
// that needs to know whether the CPUs are back asks Lender instead.
type Unblocked struct {
	W     WorkerID
	Epoch uint64
}

// GaveBack: worker W gives back the tasks sent to it for which Back is
// true (Core.GiveBack).
type GaveBack[T any] struct {
	W    WorkerID
	Back func(T) bool
}

// Withdrawn: the tasks sent to worker W for which Which is true are
// withdrawn (Core.Withdraw).
type Withdrawn[T any] struct {
	W     WorkerID
	Which func(T) bool
}

// Grew: node Node's grant grows by Res, whose GPUs are GPUs (Core.Grow).
type Grew struct {
	Node NodeID
	Res  task.Resources
	GPUs []int
}

// Reclaimed: node Node's grant gives back Res (Core.Reclaim).
type Reclaimed struct {
	Node NodeID
	Res  task.Resources
}

// NodeRemoved: node Node is gone (its process or machine ended). What ran
// or waited there comes back as Orphan and OrphanActor effects.
type NodeRemoved struct{ Node NodeID }

// Booted: the local node's pool starts (Core.Boot).
type Booted struct{}

// Closed: every core stops (Core.Close).
type Closed struct{}

func (Submitted[T]) event()       {}
func (SubmittedPacked[T]) event() {}
func (SubmittedNear[T]) event()   {}
func (ActorWaits) event()         {}
func (ActorGone) event()          {}
func (ActorRestart) event()       {}
func (WorkerReady) event()        {}
func (WorkerDied) event()         {}
func (SpawnFailed) event()        {}
func (TaskDone) event()           {}
func (Blocked) event()            {}
func (Unblocked) event()          {}
func (GaveBack[T]) event()        {}
func (Withdrawn[T]) event()       {}
func (Grew) event()               {}
func (Reclaimed) event()          {}
func (NodeRemoved) event()        {}
func (Booted) event()             {}
func (Closed) event()             {}

// Step takes one event; its effects are left for Effects. An event whose
// task type is not T is a programming error: it panics.
func (cl *Cluster[T]) Step(ev Event) {
	switch e := ev.(type) {
	case Submitted[T]:
		cl.submit(e.Task, e.Res, e.Pipelined)
	case SubmittedPacked[T]:
		cl.submitPacked(e.Task, e.Res, e.Depth)
	case SubmittedNear[T]:
		cl.submitNear(e.Task, e.Res, e.Pipelined, e.Near)
	case ActorWaits:
		cl.waitActor(e.ID, e.Res)
	case ActorGone:
		cl.actorGone(e.ID)
	case ActorRestart:
		cl.restartActor(e.ID, e.Res)
	case WorkerReady:
		cl.workerReady(e.W)
	case WorkerDied:
		cl.workerDied(e.W)
	case SpawnFailed:
		cl.spawnFailed()
	case TaskDone:
		cl.taskDone(e.W, e.Retiring)
	case Blocked:
		cl.block(e.W, e.Epoch)
	case Unblocked:
		cl.unblock(e.W, e.Epoch)
	case GaveBack[T]:
		cl.giveBack(e.W, e.Back)
	case Withdrawn[T]:
		cl.withdraw(e.W, e.Which)
	case Grew:
		cl.grow(e.Node, e.Res, e.GPUs)
	case Reclaimed:
		cl.reclaim(e.Node, e.Res)
	case NodeRemoved:
		cl.removeNode(e.Node)
	case Booted:
		cl.boot()
	case Closed:
		cl.close()
	default:
		// Not formatted with the event: that would make every event
		// Step takes escape to the heap, an allocation per task submitted
		// and per task done. The stack names the caller.
		panic("sched: Cluster.Step: an event of another task type than this cluster's")
	}
}

// Lender is the cluster as Waits' Lender: a Get's wait lends a worker's
// CPUs (Block) and asks whether they are back when it is answered
// (Unblock), a question with an answer rather than an event.
func (cl *Cluster[T]) Lender() Lender { return clusterLender[T]{cl} }

type clusterLender[T any] struct{ cl *Cluster[T] }

func (l clusterLender[T]) Epoch(w WorkerID) uint64               { return l.cl.Epoch(w) }
func (l clusterLender[T]) Block(w WorkerID, epoch uint64)        { l.cl.block(w, epoch) }
func (l clusterLender[T]) Unblock(w WorkerID, epoch uint64) bool { return l.cl.unblock(w, epoch) }
