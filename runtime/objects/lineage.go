package objects

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
)

// Lineage: how the driver keeps what rebuilding a result needs.
//
// A function task's shared-memory results record the task as submitted
// (the recovery core's lineage), and each such record holds a Lineage
// claim (holder: anyone) on every reference argument until the result is
// deleted (recovery.Claim and recovery.Release, lost.go).
// Those claims can only be taken once the result exists, but the task's
// TaskArg claims end when it is sent (Sent), and the driver drops an
// argument it put for a by-value call right after submitting. So from
// Submit to the result the task itself holds a Lineage claim on each of its
// reference arguments, which bridges the gap: without it an argument
// nothing else holds is freed while the task runs, and a result lost later
// (evicted, or its node died) could not be rebuilt.

// ClaimLineage takes a task's own Lineage claims on the reference
// arguments of orig (the task as submitted), at Submit, for a task whose
// results keep lineage (and for an actor's call its replay log keeps). They are held by anyone, not by the task: a
// holder's claims cost a map of their own, too much for every queued
// task; the node releases them once (ReleaseLineage), when the task ends.
func (k *Keeper[T]) ClaimLineage(orig *task.Spec) {
	for _, a := range orig.Args {
		if a.IsRef {
			k.objs.Claim(objtable.Holder{}, a.Ref, objtable.Lineage)
		}
	}
}

// ReleaseLineage ends the claims of ClaimLineage, when the task ends (its
// results stored, with their lineage records' claims taken first, or
// failed).
func (k *Keeper[T]) ReleaseLineage(orig *task.Spec) {
	for _, a := range orig.Args {
		if a.IsRef {
			k.Unkeep(a.Ref)
		}
	}
}

// Unkeep ends one Lineage claim held by anyone (a lineage record, an
// actor's replay log) on id.
func (k *Keeper[T]) Unkeep(id ids.ObjectID) {
	if k.objs.Release(objtable.Holder{}, id, objtable.Lineage) {
		k.Free(id)
	}
}
