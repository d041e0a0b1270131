package models

import (
	"runtime"
	"sync/atomic"
	"time"
)

// RunSynced calls fn(j, sync) once on each of members goroutines of the
// team (at most Size; j = 0 is the caller's) and returns when all have
// returned. A call of sync(action) waits until every one of the members
// has made the same number of sync calls; the last to arrive first runs
// action (nil: nothing) alone, so action sees what every member did
// before the call, and every member sees what action did after it.
//
// It lets one Run hold several phases (a data-parallel step's shards, its
// gradient sum, its update) that would otherwise each be a Run of their
// own: a phase boundary costs the members an atomic add and a short watch,
// where a Run costs the owner's hand-offs and the members' wake-ups. A
// member that waits longer than the team watches goes to sleep, so a
// member that lost its core makes the others sleep, not spin. fn must not
// use the team itself, and every member must make the same number of sync
// calls.
func (t *Team) RunSynced(members int, fn func(j int, sync func(action func()))) {
	members = min(max(members, 1), t.Size())
	if members == 1 {
		fn(0, func(action func()) {
			if action != nil {
				action()
			}
		})
		return
	}
	b := &t.barrier
	b.n = int64(members)
	tr := t.tracer
	if tr != nil {
		tr.startSynced(members)
	}
	t.run(members, func(j int) {
		sync := func(action func()) { t.arrive(j, action) }
		if tr == nil {
			fn(j, sync)
			return
		}
		// The phases' CPU time is counted per goroutine, without the
		// waits between them (a goroutine's thread stays put meanwhile).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		mark := threadCPU()
		fn(j, func(action func()) {
			tr.phaseDone(j, threadCPU()-mark)
			t.arrive(j, tr.timedAction(action))
			mark = threadCPU()
		})
		tr.phaseDone(j, threadCPU()-mark)
	}, watchFor)
	if tr != nil {
		tr.doneSynced()
	}
}

// syncWatch is how long a member watches at a sync before it sleeps:
// shorter than between Runs (watchFor), because the phases of a step are
// cut to take each member about as long, so a longer wait means a member
// lost its core, and a watching member may hold the very core it waits
// for.
const syncWatch = 50 * time.Microsecond

// teamBarrier is the meeting point of RunSynced's members: arrived counts
// the members at the current meeting, and gen counts the meetings passed.
type teamBarrier struct {
	n       int64
	arrived atomic.Int64
	gen     atomic.Uint64
}

// arrive is member j's sync call: the last member to arrive runs action,
// opens the next meeting and wakes the members that went to sleep.
func (t *Team) arrive(j int, action func()) {
	b := &t.barrier
	g := b.gen.Load() // before arriving: the meeting cannot pass before it
	if b.arrived.Add(1) == b.n {
		if action != nil {
			action()
		}
		b.arrived.Store(0)
		b.gen.Add(1)
		t.owner.rouse()
		for _, m := range t.members[:b.n-1] {
			m.rouse()
		}
		return
	}
	passed := func() bool { return b.gen.Load() != g }
	if t.watch(passed, syncWatch) {
		return
	}
	s := &t.owner
	if j > 0 {
		s = &t.members[j-1].sleeper
	}
	s.sleepUnless(passed)
}

// startSynced prepares the tracer for a RunSynced of members goroutines:
// each records its phases' CPU times on its own.
func (tr *teamTracer) startSynced(members int) {
	if now := threadCPU(); tr.left != 0 {
		tr.Serial += now - tr.left
	}
	for len(tr.phases) < members {
		tr.phases = append(tr.phases, nil)
	}
	tr.phases = tr.phases[:members]
	for j := range tr.phases {
		tr.phases[j] = tr.phases[j][:0]
	}
	tr.actions = 0
}

// phaseDone records that goroutine j spent d of CPU time on its part of
// the current phase.
func (tr *teamTracer) phaseDone(j int, d time.Duration) { tr.phases[j] = append(tr.phases[j], d) }

// timedAction wraps a sync's action to count its CPU time: it runs alone,
// so all of it is on the critical path.
func (tr *teamTracer) timedAction(action func()) func() {
	if action == nil {
		return nil
	}
	return func() {
		start := threadCPU()
		action()
		tr.actions += threadCPU() - start
	}
}

// doneSynced closes a RunSynced: each phase's busiest goroutine and every
// action join the path.
func (tr *teamTracer) doneSynced() {
	for p := range tr.phases[0] {
		most := time.Duration(0)
		for _, ph := range tr.phases {
			if p < len(ph) {
				tr.Work += ph[p]
				most = max(most, ph[p])
			}
		}
		tr.Path += most
	}
	tr.Path += tr.actions
	tr.Work += tr.actions
	tr.Runs++
	tr.left = threadCPU()
}
