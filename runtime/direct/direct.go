// Package direct keeps the driver's books of the work that goes around it:
// leases for nested tasks (a worker sends tasks straight to a pool worker
// it leased), direct actor calls (an actor calls another over a connection
// of its own, once the driver has told it where) and the results such
// callers own and promised to put. It decides who holds which lease, when
// a caller gets an actor's address (and which address), when a lease is
// granted, returned or lost and who is told, and which promises break when
// a process ends.
//
// A Table is a pure core in the style of runtime/actorq: the node feeds it
// events (Step) under its lock and carries out the effects it leaves
// (Effects): the replies to send, the workers to ask to listen, the leases
// whose resources the scheduling core takes back, the promised objects to
// fail. It has no clock, goroutine or I/O; what it must know of workers
// and objects it asks through the small Workers and Objects interfaces, so
// its tests (direct_test.go) step it through tables of events without a
// process. The workers' side is runtime/worker (direct.go, lease.go);
// the resources a lease holds are the scheduling core's (sched/lease.go).
//
// Direct calls. A caller asks once per actor where the actor takes direct
// calls (Ask). The answer waits until the actor is constructed and its
// worker said where it listens (the table asks it to, once: Listen); it
// is "" (through the driver, for good, so no call overtakes an earlier
// one by switching paths) for an actor whose calls the driver must see:
// one that may be restarted (its replay log is the driver's), one that
// checkpoints, a dead or draining one, and one listening on a Unix socket
// of another machine than the caller's. A released actor that had
// direct callers is drained rather than stopped (drain.go).
//
// Leases. A worker asks for a lease with the resources of the tasks it
// submits; the scheduling core grants one only if an idle pool worker and
// the resources are free now (sched.Core.Lease), so the answer to a
// refusal is immediate and a lease never waits. The leased worker is asked
// to listen and the owner gets its address; the owner sends it tasks until
// it returns the lease. Endings: returned; the owner's process ends (its
// leases end: Gone); the leased worker dies (the core orphans the lease:
// Orphaned; the owner sees its connection end and resends what had no
// result through the driver).
//
// Late contains (contains.go): the children of a direct result freed
// before the callee's word of them came are not claimed.
//
// Promises. A caller that passes on a reference to an owned result that
// has not arrived promises to put it (Promise); when its process ends
// first, whatever waits for such an object gets an error (Break).
package direct

import (
	"strings"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
)

// Workers is what a Table asks of the node about its workers.
type Workers[W comparable] interface {
	// Dead reports whether w's process ended: nothing is sent to it.
	Dead(w W) bool
	// ID is w's number in the scheduling core.
	ID(w W) sched.WorkerID
	// SameMachine reports whether a and b run on one machine, where a
	// Unix socket of one reaches the other.
	SameMachine(a, b W) bool
}

// Objects is what a Table asks of the driver's objects
// (objects.Keeper implements it).
type Objects interface {
	// Promised reports whether object id is claimed or waited for while
	// it does not exist yet.
	Promised(id ids.ObjectID) bool
	// Stored reports whether object id exists.
	Stored(id ids.ObjectID) bool
	// Contains reports whether object id claims references inside it
	// (a contain for it came).
	Contains(id ids.ObjectID) bool
}

// Table is the driver's books of leases, direct-call addresses and
// promises. W is the node's worker, T its record of the task that stands
// for a lease in the scheduling core. Not safe for concurrent use: the
// node calls it under its lock.
type Table[W, T comparable] struct {
	ws   Workers[W]
	objs Objects

	actors   map[ids.ActorID]*callee[W]
	leased   map[sched.WorkerID]*lease[W, T] // by leased worker
	leases   map[T]*lease[W, T]              // by the core's task for it
	promised map[W]*promises
	awaited  awaited                          // contains.go
	drains   map[ids.ActorID]*pendingDrain[W] // drain.go

	effects []Effect[W, T]
}

// New returns an empty Table that asks ws about workers and objs about
// objects.
func New[W, T comparable](ws Workers[W], objs Objects) *Table[W, T] {
	return &Table[W, T]{ws: ws, objs: objs,
		actors:   map[ids.ActorID]*callee[W]{},
		leased:   map[sched.WorkerID]*lease[W, T]{},
		leases:   map[T]*lease[W, T]{},
		promised: map[W]*promises{},
		drains:   map[ids.ActorID]*pendingDrain[W]{},
	}
}

// Kind says what an Effect asks of the node.
type Kind int

const (
	// ReplyAddr: answer caller To's request Req for an actor's address
	// with Addr ("": call it through the driver).
	ReplyAddr Kind = iota + 1
	// Listen: ask worker To to listen for direct connections (it answers
	// with its address: Listening).
	Listen
	// ReplyLease: answer owner To's lease request Req: worker ID at Addr,
	// or refused (ID 0, Addr "").
	ReplyLease
	// EndLease: lease Lease on worker ID ended: the scheduling core takes
	// its resources back (its TaskDone) if it still runs it.
	EndLease
	// Break: object Object, which To promised, will never come: store an
	// error (the worker that owned it died) for whoever waits for it.
	Break
	// Claim: object Object claims Children, the references inside it.
	Claim
	// Drain: ask worker To, whose released actor had direct callers, to
	// let their calls on the wire run and then exit (drain.go), instead
	// of stopping its process now.
	Drain
	// DrainLater: leave worker To's process alone; its released actor's
	// callers given the address have not all dialled it yet, and Drain
	// follows once each has or has died (drain.go).
	DrainLater
)

// Effect is one output of Step. Replies to a dead worker are never left.
type Effect[W, T comparable] struct {
	Kind   Kind
	To     W
	Req    uint64
	Addr   string
	ID     sched.WorkerID
	Lease  T
	Object ids.ObjectID
	// Children: Claim's references.
	Children []ids.ObjectID
}

// Effects returns the effects the steps since the last call left, in
// order, and forgets them.
func (t *Table[W, T]) Effects() []Effect[W, T] {
	e := t.effects
	t.effects = nil
	return e
}

func (t *Table[W, T]) emit(e Effect[W, T]) {
	if (e.Kind == ReplyAddr || e.Kind == ReplyLease) && t.ws.Dead(e.To) {
		return
	}
	t.effects = append(t.effects, e)
}

// pick returns the address in addrs (space-separated, as a worker says
// where it listens) that a worker on caller's machine connects to, where
// worker at listens: its Unix socket on at's machine, TCP elsewhere; ""
// when none reaches it.
func (t *Table[W, T]) pick(caller, at W, addrs string) string {
	tcp := ""
	for _, a := range strings.Fields(addrs) {
		switch {
		case !strings.HasPrefix(a, "tcp:"):
			if t.ws.SameMachine(caller, at) {
				return a // no handshake, and the shared-memory rings
			}
		case tcp == "":
			tcp = a
		}
	}
	return tcp
}
