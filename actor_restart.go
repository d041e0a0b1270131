package gray

import (
	"context"
	"fmt"
)

// Actors that survive the death of their process.
//
// An actor's state lives in its worker process. When that process dies
// unexpectedly (a crash, os.Exit, the OOM killer, kill -9; on a cluster,
// its node dying), an actor type registered with MaxRestarts is recreated
// in a new worker: its constructor runs again with the same arguments,
// then the method calls it had run are run again in their original order,
// and the calls not yet run follow. Callers see the results they would
// have seen had it never died. A replayed call whose result was already
// stored is run only for its effect on the actor's state: its result is
// not stored twice.
//
// Replay assumes methods are deterministic given the actor's state and
// their arguments. A method's side effects outside the actor (files it
// writes, tasks it submits, objects it puts) happen again when it is
// replayed; tasks and objects keep their IDs, and an object that still
// exists keeps its first value.
//
// What replay costs: without checkpoints the driver keeps every call the
// actor ran, for its lifetime: the call (tens of bytes), its small
// arguments in the driver's memory, and its large arguments (objects in
// the shared-memory store, including the constructor's) held so they are
// not freed. An actor that runs millions of calls, or receives large
// arguments, should implement Checkpointer and set CheckpointInterval: the
// log then holds at most the calls since the last checkpoint, and a
// restart replays only those.
//
// Limits: the log keeps a call's reference arguments, not references
// nested inside its argument values (a struct holding a Ref), which live
// only as long as the call's result; and in local mode (Options.LocalMode)
// actors never die with a process, so neither option does anything there.

// MaxRestarts sets how many times an actor of the type is recreated when
// its process dies (Ray's max_restarts); -1 means without limit. Kill and
// the release of the actor's last handle end it for good whatever this
// says; a restart also stops when a replayed call's argument is lost.
// Once the restarts are used up the actor is dead: its calls fail with
// ErrActorDead (and ErrWorkerDied), saying how many restarts it had.
//
// The default is 0: an actor whose process dies is dead, as it always was
// in Gray, and nothing is logged. That is deliberate. Replay keeps every
// call and its arguments until a checkpoint (see the package notes on
// actors that survive), which an actor that does not checkpoint pays for
// its whole life; it re-runs methods, which is only right for methods
// that are deterministic; and programs that replace dead actors
// themselves (RLlib's rollout and ES workers do, starting a fresh actor
// with new work) want the death reported at once. Opt in per type.
func MaxRestarts(n int) Option {
	return func(o *options) {
		if n < -1 {
			panic(fmt.Sprintf("gray: MaxRestarts(%d): use a count of 0 or more, or -1 for no limit", n))
		}
		o.maxRestarts = n
	}
}

// NoRestarts makes an actor of the type end for good when its process
// dies, on a cluster too, where actors otherwise survive the death of
// their node by default (recreated elsewhere, their calls replayed). It is
// for programs that replace lost actors themselves and want the death
// reported at once, without a replay: tune's trial actors, whose trials
// restart from their own checkpoints. When such an actor ends, for any
// reason, the actors it created and had not ended end with it (killed,
// their resources released): once it is gone no one could end them,
// since actors created inside a worker end only by Kill. It cannot be
// combined with MaxRestarts or CheckpointInterval.
func NoRestarts() Option { return func(o *options) { o.noRestarts = true } }

// CheckpointInterval makes the runtime save the actor's state every n
// method calls (Ray 0.2's checkpoint_interval): after the n-th call's
// result is sent, the actor's Checkpoint method runs before the next call,
// and the driver keeps what it returns. A restarted actor (see
// MaxRestarts) runs its constructor, then Restore with the last
// checkpoint, then only the calls made after it. The type (a pointer to
// it) must implement Checkpointer; an actor whose type does not fails to
// construct, saying so. A failed Checkpoint is listed in Errors and the
// previous checkpoint stays in force: replay is still complete.
func CheckpointInterval(n int) Option {
	return func(o *options) {
		if n < 0 {
			panic(fmt.Sprintf("gray: CheckpointInterval(%d): use a number of calls of 1 or more (0: no checkpoints)", n))
		}
		o.ckptEvery = n
	}
}

// Checkpointer is implemented by actor types (the pointer, *T) that can
// save and restore their state, for CheckpointInterval. Checkpoint returns
// the state as bytes; Restore sets it from bytes a Checkpoint of an
// earlier instance returned, on an instance its constructor just made.
type Checkpointer interface {
	Checkpoint(ctx context.Context) ([]byte, error)
	Restore(ctx context.Context, data []byte) error
}
