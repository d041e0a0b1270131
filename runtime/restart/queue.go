package restart

import "github.com/gray-ml/gray/runtime/task"

// Call is the shell's record of one of an actor's tasks, as Queue sees it.
type Call interface {
	// Kind is the kind of the call's task.
	Kind() task.Kind
}

// Queue returns what the new process of an actor restarted by Restart
// effect e runs, in order: the creation task, the restore of its last
// checkpoint, the calls to replay, then the calls the dead process was
// not yet sent (queued).
//
// The queue may still hold what an earlier restart queued and the dead
// process never got: its creation task is reused (a second one would take
// the actor's arguments twice); a restore is dropped, made again from e;
// its replays stay behind those of this restart. Every other entry is made
// with again: s, the record of a task as submitted, run again (discard:
// only for its effect on the actor's state, its results were stored the
// first time).
func Queue[T Call](e Effect, queued []T, again func(s *task.Spec, discard bool) T) []T {
	out := make([]T, 0, len(e.Replay)+len(queued)+2)
	if len(queued) > 0 && queued[0].Kind() == task.KindActorCreate {
		out, queued = append(out, queued[0]), queued[1:]
	} else {
		out = append(out, again(e.Spec, false))
	}
	if e.Restore != nil {
		out = append(out, again(e.Restore, true))
	}
	for _, r := range e.Replay {
		out = append(out, again(r.Spec, r.Discard))
	}
	for _, c := range queued {
		if c.Kind() != task.KindActorRestore {
			out = append(out, c)
		}
	}
	return out
}
