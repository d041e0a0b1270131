package direct

import (
	"maps"
	"slices"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
)

// Event is one input of Step: the types below.
type Event interface{ event() }

// Actor is what the node knows of one actor when it steps the table about
// it.
type Actor[W comparable] struct {
	ID ids.ActorID
	// Direct: its calls may bypass the driver. False for an actor that is
	// unknown, dead, draining, may be restarted or checkpoints.
	Direct bool
	// Worker hosts it (the zero W: none yet); Up: Worker is connected.
	Worker W
	Up     bool
	// Constructed: its creation (or restore) task has run; none is
	// queued or in flight.
	Constructed bool
}

// Ask: worker Caller asks (request Req) where Actor takes direct calls.
// Effects: ReplyAddr now or once the actor is constructed and listening
// (Listen first, once per actor).
type Ask[W comparable] struct {
	Caller W
	Req    uint64
	Actor  Actor[W]
}

// Changed: something that may let an actor's callers be answered
// happened: its worker connected or returned a result (its constructor's
// among them), or it died or started draining (its callers are told to
// go through the driver).
type Changed[W comparable] struct{ Actor Actor[W] }

// Listening: Worker said where it listens for direct connections ("": it
// could not). A leased worker's address goes to the lease's owner; an
// actor's (Hosts: Worker is Actor's worker) to the actor's callers.
type Listening[W comparable] struct {
	Worker W
	Addr   string
	Hosts  bool
	Actor  Actor[W]
}

// Granted: the scheduling core granted Owner's request Req a lease, Lease,
// on worker ID (Worker; Up: connected). Effect: Listen, or, when Worker is
// not up, the lease ends at once.
type Granted[W, T comparable] struct {
	Owner  W
	Req    uint64
	Lease  T
	ID     sched.WorkerID
	Worker W
	Up     bool
}

// Refused: Owner's lease request Req gets no lease (the core had none, or
// the driver is closing). Effect: ReplyLease refusing it.
type Refused[W comparable] struct {
	Owner W
	Req   uint64
}

// Returned: Owner returns its lease on worker ID. Effect: EndLease (when
// Owner holds it).
type Returned[W comparable] struct {
	Owner W
	ID    sched.WorkerID
}

// Orphaned: the core orphaned Lease: its worker died. The owner sees the
// connection end and resends what had no result through the driver; an
// unanswered request is refused.
type Orphaned[T comparable] struct{ Lease T }

// Gone: Worker's process ended. Its promises break (Break each) and the
// leases it owned end (EndLease each); a drain that waited for it to dial
// waits no more (Drain, when it was the last), and one of its own actor
// is dropped.
type Gone[W comparable] struct{ Worker W }

// Promise: Worker promises (On) to put Object, an owned result it passed
// on before it arrived, or withdraws the promise.
type Promise[W comparable] struct {
	Worker W
	Object ids.ObjectID
	On     bool
}

func (Ask[W]) event()        {}
func (Changed[W]) event()    {}
func (Listening[W]) event()  {}
func (Granted[W, T]) event() {}
func (Refused[W]) event()    {}
func (Returned[W]) event()   {}
func (Orphaned[T]) event()   {}
func (Gone[W]) event()       {}
func (Promise[W]) event()    {}

// Step takes one event; its effects are left for Effects.
func (t *Table[W, T]) Step(ev Event) {
	switch e := ev.(type) {
	case Ask[W]:
		t.ask(e)
	case Changed[W]:
		t.answer(e.Actor)
	case Listening[W]:
		if l := t.leased[t.ws.ID(e.Worker)]; l != nil {
			t.leaseAddr(l, e.Worker, e.Addr)
		} else if e.Hosts && e.Actor.Worker == e.Worker {
			c := t.calleeOf(e.Actor.ID)
			c.addr, c.said = e.Addr, true
			t.answer(e.Actor)
		}
	case Granted[W, T]:
		t.grant(e)
	case Refused[W]:
		t.emit(Effect[W, T]{Kind: ReplyLease, To: e.Owner, Req: e.Req})
	case Returned[W]:
		if l := t.leased[e.ID]; l != nil && l.owner == e.Owner {
			t.end(l)
		}
	case Orphaned[T]:
		if l := t.leases[e.Lease]; l != nil {
			t.forget(l)
		}
	case Gone[W]:
		t.drainGone(e.Worker)
		t.breakPromises(e.Worker)
		for _, id := range slices.Sorted(maps.Keys(t.leased)) {
			if l := t.leased[id]; l.owner == e.Worker {
				t.end(l)
			}
		}
	case Promise[W]:
		t.promise(e.Worker, e.Object, e.On)
	case Published:
		t.published(e.Object)
	case Contain:
		t.contain(e)
	case Stopping[W]:
		t.stopping(e)
	case Dialed[W]:
		t.dialed(e)
	}
}

// IsLease reports whether task p stands for a lease.
func (t *Table[W, T]) IsLease(p T) bool { return t.leases[p] != nil }
