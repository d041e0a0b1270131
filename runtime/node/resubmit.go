package node

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/resubmit"
	"github.com/gray-ml/gray/runtime/task"
)

// Submissions made again by a call or task that runs a second time: an
// actor's calls replayed after a restart (runtime/actors), a task run again
// after its node died or to rebuild its results. runtime/resubmit decides
// whether one is a repeat of the first run's; the node answers its
// questions (submitFacts) and drops a repeat.

// submittedBefore reports whether task s, submitted by worker w, exists
// already because an earlier run of w's current call or task submitted
// it; then it is not submitted again.
func (n *Node) submittedBefore(w *proc, s *task.Spec) bool {
	switch resubmit.Decide(s.Kind, &submitFacts{n: n, w: w, s: s}) {
	case resubmit.New:
		return false
	case resubmit.Constructed:
		// The references inside its arguments were claimed for the
		// constructor again (MsgContain before MsgSubmit); it ran.
		n.constructed(s)
	case resubmit.Gone:
		n.failGone(s)
	}
	return true
}

// submitFacts answers runtime/resubmit's questions about task s, submitted
// by worker w.
type submitFacts struct {
	n *Node
	w *proc
	s *task.Spec
}

func (f *submitFacts) ActorExists() bool  { return f.n.acts.Actor(f.s.ID) != nil }
func (f *submitFacts) Constructing() bool { return f.n.acts.Actor(f.s.ID).Constructing() }
func (f *submitFacts) Rebuilding() bool   { return f.n.rec.Rebuilding(f.s.ID) }
func (f *submitFacts) TargetHere() bool   { return f.n.acts.Actor(f.s.Actor()) != nil }
func (f *submitFacts) Again() bool        { return f.n.reexecuting(f.w) }
func (f *submitFacts) Held() bool         { return f.n.acts.Actor(f.s.Actor()).Holds(f.s.ID) }
func (f *submitFacts) Logged() bool       { return f.w.actor != nil && f.n.acts.Logged(f.s.Actor(), f.s.ID) }

func (f *submitFacts) Stored() (stored, lost bool) {
	o, ok := f.n.store.Get(f.s.Return(0))
	return ok, ok && o.Err != nil && errors.Is(o.Err, task.ErrObjectLost)
}

// failGone stores, as the results of call s, which ran once and whose
// results were freed since, a lost-object error saying so.
func (n *Node) failGone(s *task.Spec) {
	for i := range s.Returns() {
		id := s.Return(i)
		n.putLocked(id, task.Object{Err: task.Lost(id, task.ErrLostActorMethod,
			fmt.Sprintf("a replayed call asks again for the result of %s, freed since; the call is not made twice", s.Func), nil)})
	}
}

// reexecuting reports whether worker w runs a call or task a second time:
// an actor's call (or constructor) replayed after a restart, or a task
// run again after its node died or to rebuild its results.
func (n *Node) reexecuting(w *proc) bool {
	if a := w.actor; a != nil {
		return a.Replaying()
	}
	p, ok := n.core.Running(w.id)
	if !ok {
		return false
	}
	return n.rec.Rebuilding(p.spec.ID) || n.rec.Runs(p) > 0
}
