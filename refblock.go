package gray

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// Release of a burst's references in blocks.
//
// A Ref's record normally gets a finalizer of its own, so its object is
// freed at the first collection after the last copy of that Ref goes. The
// runtime's finalizer record costs 48 bytes outside the heap and about a
// fifth of the driver's CPU when a program queues tasks in a burst
// (benchmarks/results/leases-queue.md, "Queued tasks: one finalizer per block of
// references"). So the task results of a burst (a run of Remote calls with
// no Get, GetAll, Wait or Free of the session between them) share
// finalizers: past a run's first loneRefs references, each further one is
// a slot of a block of blockRefs records with one finalizer for the block.
// A block's objects are freed once none of its references remains. The
// cost of the saving: a reference kept from a burst keeps the objects of
// the rest of its block (at most blockRefs-1 others, all submitted in the
// same run) until it goes too. A program that consumes results between
// calls (a Get or Wait per task, as pipelines and rollout loops do) gets
// a finalizer per reference as before, and Free releases any reference at
// once.
const (
	// loneRefs is how many references of a run get their own finalizer:
	// short runs (a call's several returns, a handful of calls before a
	// Wait) cost no block that would stay mostly empty.
	loneRefs = 8
	// blockRefs records and a block's header fill the 2,048-byte size
	// class exactly (8 + 63·32 bytes).
	blockRefs = 63
)

// refBlock holds the records of up to blockRefs references made in one
// run. It holds no pointer to itself (a finalizer's object in a cycle
// might never be collected): used counts the slots handed out.
type refBlock struct {
	used  int
	keeps [blockRefs]refKeep
}

// refRuns hands out the records of a session's task results. The block
// being filled is held weakly, so a burst's last block is freed once its
// references go, whether or not another call ever comes.
type refRuns struct {
	consumed atomic.Bool // a Get, GetAll, Wait or Free since the run began

	mu   sync.Mutex
	run  int // references made in this run
	open weak.Pointer[refBlock]
}

// consume ends the current run: the next task result starts a new one.
// It stores only when needed, so Gets from many goroutines do not
// contend for the flag's cache line.
func (r *refRuns) consume() {
	if !r.consumed.Load() {
		r.consumed.Store(true)
	}
}

// resultRef returns the reference to a task's return id (see above).
func resultRef[T any](s *session, id ObjectID) Ref[T] {
	return Ref[T]{k: s.refs.keep(s, id)}
}

// keep returns the record of a task result's reference in session s.
func (r *refRuns) keep(s *session, id ObjectID) *refKeep {
	r.mu.Lock()
	if r.consumed.Load() {
		r.consumed.Store(false)
		r.run = 0
		r.open = weak.Pointer[refBlock]{} // a new run shares no block with the last
	}
	r.run++
	if r.run <= loneRefs {
		r.mu.Unlock()
		return newKeep(s, id)
	}
	b := r.open.Value()
	if b == nil || b.used == len(b.keeps) {
		b = new(refBlock)
		runtime.SetFinalizer(b, dropBlock)
		r.open = weak.Make(b)
	}
	k := &b.keeps[b.used]
	b.used++
	k.id, k.s = id, s
	r.mu.Unlock()
	return k
}

// dropBlock tells the backend that no reference of b remains.
func dropBlock(b *refBlock) {
	for i := range b.used {
		dropRef(&b.keeps[i])
	}
}
