// Package restart is the driver's core for actors that are recreated when
// their process or their node dies (gray.MaxRestarts; on a cluster, every
// actor whose node dies), with their calls replayed in order (section
// 1.23.3 of Ray 0.2's documentation).
//
// For an actor whose type allows restarts it keeps a log: the creation
// task as submitted, and every method call sent to the actor since its
// last checkpoint, as submitted (reference arguments intact). Each record
// holds a Lineage claim on its reference arguments (Claim and Release
// effects), so they are not freed while they may be replayed. A
// checkpoint of the actor's state after call X trims the log up to X.
//
// When the actor dies it decides whether it restarts (its type allows
// it, its restarts are not used up, its checkpoint can be read) and what
// the new process runs before the calls not yet sent: the creation task,
// a restore of the last checkpoint, the logged calls (run again for their
// effect on the state only: their results were stored already), then the
// calls the dead process had been sent but not finished.
//
// It also ends, with an actor of a type that allows no restarts
// (gray.NoRestarts), the actors that actor created: no one else could end
// them once it is gone (on a cluster, a tune trial's learner whose node
// died would otherwise leave its rollout workers holding their CPUs).
//
// Like runtime/sched and runtime/recovery it is a plain state machine: no
// clock, no goroutine, no I/O. The shell (runtime/node) feeds it events
// with Step and carries out the effects it leaves (Effects), in order;
// facts only the shell knows (the checkpoint's bytes, whether the actor
// ends anyway) come in events. Read-only queries never change the state.
// The tests (restart_test.go) drive it with tables of events and compare
// the effects, as etcd's raft interaction tests do.
package restart

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// DefaultNodeLoss is how many times a cluster restarts an actor whose
// type sets no MaxRestarts when its node dies.
const DefaultNodeLoss = 3

// Config configures a Core.
type Config struct {
	// Cluster: every actor whose type allows it (not NoRestarts) survives
	// the loss of its node, up to NodeLoss times; the death of its process
	// alone still ends it, unless its type asks for restarts.
	Cluster bool
	// NodeLoss bounds those restarts; zero: DefaultNodeLoss.
	NodeLoss int
}

// Core keeps the replay logs of a driver's actors. Not safe for
// concurrent use.
type Core struct {
	cfg     Config
	actors  map[ids.ActorID]*log
	owners  map[ids.ActorID][]ids.ActorID // NoRestarts actors -> the actors they created, in order
	effects []Effect
}

// log is the restart state of one actor.
type log struct {
	max      int // restarts allowed; -1: no limit
	restarts int // restarts so far
	create   *task.Spec
	// calls: the method calls sent since the last checkpoint, in the order
	// sent: those that ran (done) first, then those sent and not done,
	// then those a restart queued again and the shell has not sent yet.
	calls []*call
	saved bool // a checkpoint exists
	// nodeLossOnly: restarted only when its node died, not when its
	// process did (a cluster's default).
	nodeLossOnly bool
	// starting: the actor's current worker has not connected yet. Losing
	// it then (its node died before it started, or the death of the
	// previous process and of its node are both reported) places the
	// actor again without counting another restart: one node death is one
	// restart.
	starting bool
}

// call is a method call as submitted.
type call struct {
	spec *task.Spec
	sent bool // sent to the actor's current process
	done bool // its result came back: it changed the actor's state
	// discard: its results were stored already (it ran before a restart).
	discard bool
}

// New returns a core with no actors.
func New(cfg Config) *Core {
	if cfg.NodeLoss <= 0 {
		cfg.NodeLoss = DefaultNodeLoss
	}
	return &Core{cfg: cfg, actors: map[ids.ActorID]*log{}, owners: map[ids.ActorID][]ids.ActorID{}}
}

// Effects returns the effects of the events stepped since the last call,
// in order, and forgets them.
func (c *Core) Effects() []Effect {
	e := c.effects
	c.effects = nil
	return e
}

func (c *Core) emit(e Effect) { c.effects = append(c.effects, e) }

// Restartable reports whether actor id may be restarted: its calls are
// logged.
func (c *Core) Restartable(id ids.ActorID) bool { return c.actors[id] != nil }

// Saved reports whether actor id has a checkpoint (the shell reads it
// for Died).
func (c *Core) Saved(id ids.ActorID) bool {
	l := c.actors[id]
	return l != nil && l.saved
}

// Logged reports whether call tid of actor id ran since the actor's last
// checkpoint (and since its last restart).
func (c *Core) Logged(id ids.ActorID, tid ids.TaskID) bool {
	if l := c.actors[id]; l != nil {
		for _, x := range l.calls {
			if x.spec.ID == tid {
				return x.done
			}
		}
	}
	return false
}

// Restarts returns how many times actor id was restarted and how many of
// its calls the log holds as run.
func (c *Core) Restarts(id ids.ActorID) (restarts, logged int) {
	l := c.actors[id]
	if l == nil {
		return 0, 0
	}
	for _, x := range l.calls {
		if x.done {
			logged++
		}
	}
	return l.restarts, logged
}

// record returns a copy of s with its reference arguments intact and
// claims them (Claim).
func (c *Core) record(s *task.Spec) *task.Spec {
	r := *s
	r.Args = append([]task.Arg(nil), s.Args...)
	r.SetGPUIDs(nil)
	c.emit(Effect{Kind: Claim, Spec: &r})
	return &r
}

// times says n times in words: "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
