package node

import (
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
)

// Lineage: how the node keeps what rebuilding a result needs.
//
// A function task's shared-memory results record the task as submitted
// (the recovery core's lineage), and each such record holds a Lineage
// claim (holder: anyone) on every reference argument until the result is
// deleted (recovery.Claim and recovery.Release, lost.go).
// Those claims can only be taken once the result exists, but the task's
// TaskArg claims end when it is sent (resolveArgs), and the driver drops an
// argument it put for a by-value call right after submitting. So from
// Submit to the result the task itself holds a Lineage claim on each of its
// reference arguments, which bridges the gap: without it an argument
// nothing else holds is freed while the task runs, and a result lost later
// (evicted, or its node died) could not be rebuilt.

// claimLineage takes p's own Lineage claims on its reference arguments, at
// Submit, for a task whose results keep lineage. They are held by anyone,
// not by the task: a holder's claims cost a map of their own, too much for
// every queued task; p.lineageHeld makes their release happen once.
func (n *Node) claimLineage(p *pending) {
	orig := p.lineage()
	if orig == nil || orig == p.spec { // no reference argument (see Submit)
		return
	}
	for _, a := range orig.Args {
		if a.IsRef {
			n.objs.Claim(objtable.Holder{}, a.Ref, objtable.Lineage)
		}
	}
	p.lineageHeld = true
}

// releaseLineage ends p's own Lineage claims, when it ends (its results
// stored, with their lineage records' claims taken first, or failed).
func (n *Node) releaseLineage(p *pending) {
	if !p.lineageHeld {
		return
	}
	p.lineageHeld = false
	for _, a := range p.record.Args {
		if a.IsRef {
			n.unkeep(a.Ref)
		}
	}
}

// unkeep ends one Lineage claim held by anyone (a lineage record, an
// actor's replay log) on id.
func (n *Node) unkeep(id ids.ObjectID) {
	if n.objs.Release(objtable.Holder{}, id, objtable.Lineage) {
		n.free(id)
	}
}

// argsLost reports whether a reference argument of task p, about to be
// sent to a worker (as its running task, pipelined behind it, or as an
// actor's call), was lost since p got it (on a cluster: its only holder
// died while p was queued). have starts rebuilding each such argument, and
// p waits for it again as at Submit (its claims and pins are still held);
// an argument lost for good (a Put) fails p, as at Submit.
func (n *Node) argsLost(p *pending) bool {
	for _, a := range p.spec.Args {
		if !a.IsRef {
			continue
		}
		o, ok := n.have(a.Ref)
		if !ok {
			p.missing++
			n.waiters[a.Ref] = append(n.waiters[a.Ref], waiter{p: p})
		} else if o.Err != nil && p.failed == nil {
			p.failed = o.Err // lost for good (a Put): p fails with it
		}
	}
	return p.missing > 0 || p.failed != nil
}
