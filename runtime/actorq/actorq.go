// Package actorq is the driver's decisions about one actor's calls: which
// queued call goes out next, which result belongs to which call, when the
// actor ends (killed, released with nothing left to run, or dead for a
// reason the shell gives), and what its queued and sent calls get then.
//
// An actor's calls run one after another on its own worker, in the order
// they were submitted, so the queue holds them in that order and sends a
// call only once every call before it went out; a call whose arguments do
// not exist yet holds back the calls behind it. A result always belongs
// to the oldest call sent.
//
// Like runtime/restart it is a plain state machine: every input goes
// through Step(event) and every outcome is an Effect, read with Effects;
// the rest are read-only queries. It never blocks, starts no goroutine and
// touches no socket. What it cannot know (whether a call's arguments
// exist, whether the actor's worker is connected) the shell answers:
// Check per call, Up in the events that may send.
package actorq

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Call is the shell's record of one of an actor's tasks, as the queue
// sees it.
type Call interface {
	// Spec is the task as it will be sent.
	Spec() *task.Spec
	// Again reports whether the call is run a second time, to rebuild a
	// restarted actor's state.
	Again() bool
}

// Check is the shell's answer about call c's arguments: wait, they do
// not all exist yet; failed, one of them failed (nil: none did).
type Check[T Call] func(c T) (wait bool, failed *task.TaskError)

// Actor is one actor's call queue and whether the actor is alive.
type Actor[T Call] struct {
	id    ids.ActorID
	typ   string
	check Check[T]

	queue       []T // not yet sent, in submission order
	inflight    []T // sent, in order
	dead        bool
	death       *task.TaskError
	draining    bool // no handle remains: end once nothing is left to run
	killed      bool // by gray.Kill or its creator's end: its calls fail quietly
	restartable bool // its type allows restarts: the restart core logs its calls

	effects []Effect[T]
}

// New returns the queue of actor id of type typ, with nothing queued;
// check answers for its calls' arguments.
func New[T Call](id ids.ActorID, typ string, check Check[T]) Actor[T] {
	return Actor[T]{id: id, typ: typ, check: check}
}

// Queued returns the calls not yet sent, in order. The slice is the
// queue's own: read it, don't keep it past the next Step.
func (a *Actor[T]) Queued() []T { return a.queue }

// Inflight returns the calls sent whose results have not come, oldest
// first (the slice is the queue's own, as for Queued).
func (a *Actor[T]) Inflight() []T { return a.inflight }

// Idle reports whether the actor holds no call, queued or sent.
func (a *Actor[T]) Idle() bool { return len(a.queue) == 0 && len(a.inflight) == 0 }

// Dead reports whether the actor ended for good.
func (a *Actor[T]) Dead() bool { return a.dead }

// Draining reports whether no handle to the actor remains (Release).
func (a *Actor[T]) Draining() bool { return a.draining }

// Killed reports whether the actor was killed on purpose (Kill).
func (a *Actor[T]) Killed() bool { return a.killed }

// Restartable reports whether the actor, alive, may be restarted: its
// calls are logged for a replay.
func (a *Actor[T]) Restartable() bool { return a.restartable }

// Holds reports whether call id is queued or in flight (one a restart
// queued again, say).
func (a *Actor[T]) Holds(id ids.TaskID) bool {
	for _, cs := range [][]T{a.queue, a.inflight} {
		for _, c := range cs {
			if c.Spec().ID == id {
				return true
			}
		}
	}
	return false
}

// Constructing reports whether the actor's constructor has yet to
// finish: its creation task is the first call in flight, or the first
// queued.
func (a *Actor[T]) Constructing() bool {
	for _, cs := range [][]T{a.inflight, a.queue} {
		if len(cs) > 0 && cs[0].Spec().Kind == task.KindActorCreate {
			return true
		}
	}
	return false
}

// Constructed reports whether the actor's worker has run its creation
// task and the restore of its checkpoint: neither is queued or in
// flight. Until then its state is not the one its callers expect.
func (a *Actor[T]) Constructed() bool {
	for _, cs := range [][]T{a.queue, a.inflight} {
		for _, c := range cs {
			if k := c.Spec().Kind; k == task.KindActorCreate || k == task.KindActorRestore {
				return false
			}
		}
	}
	return true
}

// Replaying reports whether the call in flight first is run a second
// time, to rebuild a restarted actor's state (Call.Again).
func (a *Actor[T]) Replaying() bool { return len(a.inflight) > 0 && a.inflight[0].Again() }

// DeadErr is the error a call fn of the dead actor gets: it names the
// actor and why it died, and wraps task.ErrActorDead.
func (a *Actor[T]) DeadErr(fn string) *task.TaskError {
	msg := fmt.Sprintf("actor %s %s is dead", a.typ, a.id)
	var cause error = task.ErrActorDead
	if a.death != nil {
		msg = fmt.Sprintf("actor %s %s is dead: %s", a.typ, a.id, a.death.Message)
		cause = a.death
	}
	return &task.TaskError{Function: fn, Message: msg, Cause: cause}
}

// Effects returns the effects of the Steps since the last call and
// forgets them. A Step the shell makes while carrying them out leaves
// its effects for its own call.
func (a *Actor[T]) Effects() []Effect[T] {
	out := a.effects
	a.effects = nil
	return out
}

func (a *Actor[T]) emit(e Effect[T]) { a.effects = append(a.effects, e) }

// pump sends the queued calls whose arguments exist, in order, while the
// worker is up; a draining actor left with nothing ends.
func (a *Actor[T]) pump(up bool) {
	if !up || a.dead {
		return
	}
	for len(a.queue) > 0 {
		c := a.queue[0]
		wait, failed := a.check(c)
		if wait {
			return
		}
		a.queue = a.queue[1:]
		if failed != nil {
			s := c.Spec()
			if s.Kind == task.KindActorCreate {
				a.die(&task.TaskError{Function: a.typ, Message: "an argument of the constructor failed", Cause: failed})
				return
			}
			if c.Again() { // a call replayed after a restart: the state cannot be rebuilt
				a.emit(Effect[T]{Kind: Unsent, Call: c})
				a.die(&task.TaskError{Function: a.typ, Message: "replaying " + s.Func + " after a restart: an argument failed: " + task.FirstLine(failed.Error()), Cause: failed})
				return
			}
			a.emit(Effect[T]{Kind: ArgFailed, Call: c})
			continue
		}
		a.inflight = append(a.inflight, c)
		a.emit(Effect[T]{Kind: Send, Call: c})
	}
	if a.draining && len(a.inflight) == 0 {
		a.die(released(a.typ))
	}
}

// die ends the actor for why: Died, a Fail for every call sent then
// queued, then Gone.
func (a *Actor[T]) die(why *task.TaskError) {
	if a.dead {
		return
	}
	a.dead = true
	if !errors.Is(why, task.ErrActorDead) {
		// Whatever ended it (its process died, it never started), calls
		// to a dead actor fail with ErrActorDead, as gray documents.
		why.Cause = deadCause(why.Cause)
	}
	a.death = why
	a.emit(Effect[T]{Kind: Died, Err: why})
	for _, ps := range [][]T{a.inflight, a.queue} {
		for _, c := range ps {
			a.emit(Effect[T]{Kind: Fail, Call: c, Err: a.DeadErr(c.Spec().Func), Quiet: a.killed})
		}
	}
	a.inflight, a.queue = nil, nil
	a.restartable = false // dead for good: its log's claims end
	a.emit(Effect[T]{Kind: Gone})
}

// released is why an actor of type typ ends once its queued calls are
// done: the program holds no handle to it (Release).
func released(typ string) *task.TaskError {
	return &task.TaskError{Function: typ, Message: "no handle to the actor remains", Cause: task.ErrActorDead}
}

// deadCause is the cause of an actor's death that also says it is dead:
// it wraps task.ErrActorDead and why (nil: nothing more to say).
func deadCause(why error) error {
	if why == nil {
		return task.ErrActorDead
	}
	return fmt.Errorf("%w: %w", task.ErrActorDead, why)
}

// ID returns the actor's ID.
func (a *Actor[T]) ID() ids.ActorID { return a.id }

// Type returns the name of the actor's type (its creation task's
// function), which its errors name.
func (a *Actor[T]) Type() string { return a.typ }
