package actorq

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Event is one input of Step: the types below.
type Event interface{ event() }

// Queued: call Call was submitted (its creation task, or a method call).
// A method call to an actor that is dead or has no handle left fails
// (Fail, quiet when the actor was killed); otherwise the queue sends what
// it can (as Pump). The creation task waits for the actor's worker.
type Queued[T Call] struct {
	Call T
	// Up: the actor's worker is connected.
	Up bool
}

// Pump: the actor's worker connected (Up), or an argument of a queued
// call exists now. Effects: Send for each call whose turn it is and whose
// arguments exist; ArgFailed for a call whose argument failed; Died...
// when the constructor's argument or a replayed call's failed, or when
// a released actor has nothing left.
type Pump struct{ Up bool }

// Returned: the actor's worker returned the result of task ID. Effect:
// Ran for the oldest call sent, when it is that task (else none: the
// actor was killed, its calls failed already).
type Returned struct{ ID ids.TaskID }

// Finished: the shell carried out a result (Ran). A released actor with
// nothing left ends.
type Finished struct{}

// Release: the program holds no handle to the actor. It ends once
// nothing is left to run, at once when it has a worker (HasWorker) and
// nothing queued or sent.
type Release struct{ HasWorker bool }

// Kill: the actor is ended on purpose (gray.Kill, or the end of the actor
// that created it), for Why. Its calls fail quietly.
type Kill struct{ Why *task.TaskError }

// End: the actor ends for Why (its process died for good, no worker can
// start, its constructor failed...). Nothing when it is dead already.
type End struct{ Why *task.TaskError }

// Requeue: the actor restarts; Queue is what its new process runs, in
// order (restart.Queue), and nothing is in flight.
type Requeue[T Call] struct{ Queue []T }

// Restartable: the actor's type allows restarts (until it dies).
type Restartable struct{}

func (Queued[T]) event()   {}
func (Pump) event()        {}
func (Returned) event()    {}
func (Finished) event()    {}
func (Release) event()     {}
func (Kill) event()        {}
func (End) event()         {}
func (Requeue[T]) event()  {}
func (Restartable) event() {}

// Kind says what an Effect asks of the shell.
type Kind int

const (
	// Send: send Call to the actor's worker (its arguments exist).
	Send Kind = iota + 1
	// ArgFailed: an argument of Call failed: fail Call with it.
	ArgFailed
	// Unsent: Call, a replay, goes out no more (its arguments' claims end);
	// the actor dies next.
	Unsent
	// Died: the actor is dead for Err: its direct callers and the control
	// store learn it. A Fail per call, then Gone follow.
	Died
	// Fail: fail Call with Err (Quiet: the actor was killed, no failure to
	// report).
	Fail
	// Gone: the dead actor's calls have failed: free what it holds and
	// stop its worker.
	Gone
	// Ran: the result the worker returned is Call's.
	Ran
)

// Effect is one output of Step.
type Effect[T Call] struct {
	Kind  Kind
	Call  T
	Err   *task.TaskError
	Quiet bool
}

// Step takes one event; its effects are left for Effects.
func (a *Actor[T]) Step(ev Event) {
	switch e := ev.(type) {
	case Queued[T]:
		if e.Call.Spec().Kind == task.KindActorCreate {
			a.queue = append(a.queue, e.Call)
			return
		}
		if a.dead || a.draining {
			a.emit(Effect[T]{Kind: Fail, Call: e.Call, Err: a.DeadErr(e.Call.Spec().Func), Quiet: a.killed})
			return
		}
		a.queue = append(a.queue, e.Call)
		a.pump(e.Up)
	case Pump:
		a.pump(e.Up)
	case Returned:
		if len(a.inflight) == 0 || a.inflight[0].Spec().ID != e.ID {
			return
		}
		c := a.inflight[0]
		a.inflight = a.inflight[1:]
		a.emit(Effect[T]{Kind: Ran, Call: c})
	case Finished:
		if a.draining && a.Idle() {
			a.die(released(a.typ))
		}
	case Release:
		if a.dead {
			return
		}
		a.draining = true
		if e.HasWorker && a.Idle() {
			a.die(released(a.typ))
		}
	case Kill:
		if !a.dead {
			a.killed = true
			a.die(e.Why)
		}
	case End:
		a.die(e.Why)
	case Requeue[T]:
		a.queue, a.inflight = e.Queue, nil
	case Restartable:
		a.restartable = !a.dead
	}
}
