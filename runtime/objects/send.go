package objects

import (
	"github.com/gray-ml/gray/runtime/task"
)

// A task's arguments as it leaves the driver.
//
// A task holds its reference arguments (TaskArg claims, and for shared
// values the task's pin: see Need) from Submit until it is sent. Sending
// resolves them: the objects live in the driver, so their values (or, for
// a shared-memory object, its ID and size) travel with the task and save
// the worker a round trip. The task no longer needs the objects then, so
// its TaskArg claims end; its pins last until it ends (UnpinTask).

// Send prepares task s for a worker on node n: it returns where that
// worker pulls s's shared arguments from (LocateArgs; nil off a cluster),
// then replaces each reference argument by its value, or by its ID and
// size when it lives in shared memory, and ends the task's claim on it.
func (k *Keeper[T]) Send(n NodeID, s *task.Spec) []Location {
	locs := k.LocateArgs(n, s)
	for i := range s.Args {
		a := &s.Args[i]
		if !a.IsRef {
			continue
		}
		o, _ := k.store.Get(a.Ref)
		a.IsRef = false
		if o.Shared && o.Err == nil {
			a.Shared, a.Size = true, o.Size
		} else {
			a.Data = o.Data
		}
		k.Sent(a.Ref)
	}
	return locs
}

// Unsent releases the objects of task s, which ends without being sent
// (it failed, or its actor died): its pins and its claims on its
// reference arguments.
func (k *Keeper[T]) Unsent(s *task.Spec) {
	k.UnpinTask(s.ID)
	for i := range s.Args {
		if a := &s.Args[i]; a.IsRef {
			a.IsRef = false
			k.Sent(a.Ref)
		}
	}
}
