package sched

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
)

// Waits matches Get and Wait requests with the objects they wait for, and
// decides when each is answered. It is the scheduling core's other half of
// a blocked worker: a request of a pool worker's running task that must
// wait lends the worker's CPUs out (Lender.Block), and its answer waits
// until the worker has them back (Lender.Unblock, then Resume).
//
// Like Core it does no I/O and never blocks: events go in (Add, Stored,
// Timeout, Reopen, Drop, Resume, TaskEnded, WorkerGone) and answers come
// out (Effects), to be sent by the caller. Timeouts are events: the caller
// owns the clock. An object lost or freed is stored as an error saying so
// (task.Lost, task.ErrFreed): for the waiters that is Stored too; one
// evicted between readiness and the answer makes the caller Reopen the
// answer. Every request ends exactly once, answered or dropped
// (its worker died, its task ended while the answer waited for its CPUs,
// or the caller gave up on it). Check verifies the invariants. A Waits is
// not safe for concurrent use.
type Waits[R any] struct {
	cpus   Lender
	next   ReqID
	reqs   map[ReqID]*waitReq[R]
	by     map[ids.ObjectID][]slot    // the waiting slots of each object
	parked map[WorkerID][]*waitReq[R] // answered, waiting for the worker's CPUs
	out    []Answer[R]                // answers not yet taken, from head on
	head   int
}

// Lender is what Waits needs of the scheduling core for a worker that
// blocks: *Core implements it, and a Cluster lends through Cluster.Lender.
type Lender interface {
	Epoch(WorkerID) uint64
	Block(WorkerID, uint64)
	Unblock(WorkerID, uint64) bool
}

// ReqID names a request of a Waits.
type ReqID uint64

// NoWorker is the Worker of a request of the driver's own program.
const NoWorker WorkerID = -1

// Request is a Get or a Wait.
type Request[R any] struct {
	Payload R        // the caller's own record of the request, handed back in its Answer
	Worker  WorkerID // who asks: a worker, or NoWorker
	// Lends: the request blocks a pool worker's running task, whose CPUs
	// are lent out while it waits (not for the driver, nor for an actor,
	// which keeps its resources).
	Lends   bool
	Objects []ids.ObjectID
	// Ready says which objects are readable now (the caller's store knows);
	// the Waits updates it and owns it from Add on.
	Ready []bool
	// Need is how many objects must be ready: len(Objects) for a Get,
	// num_returns for a Wait.
	Need int
}

// Answer is the effect of Waits: send this request its answer.
type Answer[R any] struct {
	ID ReqID
	Request[R]
	// TimedOut: a Wait answered by its timeout, with fewer than Need
	// objects ready.
	TimedOut bool
	// epoch is the worker's epoch when the request was added: a Reopen
	// lends the CPUs of that task only, never of a task that came after.
	epoch uint64
}

type slot struct {
	id ReqID
	i  int
}

type waitReq[R any] struct {
	ID ReqID
	Request[R]
	have   int
	counts bool   // blocked its worker (Lender.Block) and not yet unblocked
	epoch  uint64 // the worker's epoch when the request was added
	parked bool
}

// NewWaits returns an empty Waits whose blocked workers lend their CPUs
// through cpus.
func NewWaits[R any](cpus Lender) *Waits[R] {
	return &Waits[R]{cpus: cpus, reqs: map[ReqID]*waitReq[R]{}, by: map[ids.ObjectID][]slot{}, parked: map[WorkerID][]*waitReq[R]{}}
}

// Effects returns the answers to send, in order, and forgets them.
func (ws *Waits[R]) Effects() []Answer[R] {
	out := ws.out[ws.head:]
	ws.out, ws.head = nil, 0
	return out
}

// Next takes the first answer to send, if any. Unlike Effects it reuses its
// buffer, and answers that events cause while the caller sends this one
// come after it.
func (ws *Waits[R]) Next() (Answer[R], bool) {
	if ws.head == len(ws.out) {
		return Answer[R]{}, false
	}
	a := ws.out[ws.head]
	ws.out[ws.head] = Answer[R]{}
	ws.head++
	if ws.head == len(ws.out) {
		ws.out, ws.head = ws.out[:0], 0
	}
	return a, true
}

// Pending reports whether answers are waiting to be taken (Effects, Next).
func (ws *Waits[R]) Pending() bool { return ws.head < len(ws.out) }

// Len returns how many requests are open: waiting, or answered and parked.
func (ws *Waits[R]) Len() int { return len(ws.reqs) }

// Open reports whether request id is open: waiting, or answered and
// parked until its worker has its CPUs back.
func (ws *Waits[R]) Open(id ReqID) bool { return ws.reqs[id] != nil }

// Waiting reports whether an open request waits for object id.
func (ws *Waits[R]) Waiting(id ids.ObjectID) bool { return len(ws.by[id]) > 0 }

// Add registers a request and returns its ID. One whose Need objects are
// ready is answered at once; otherwise it waits, and a lending worker's
// CPUs are lent out.
func (ws *Waits[R]) Add(r Request[R]) ReqID {
	ws.next++
	if len(r.Ready) != len(r.Objects) {
		r.Ready = make([]bool, len(r.Objects))
	}
	r.Need = min(max(r.Need, 0), len(r.Objects))
	var epoch uint64
	if r.Lends {
		epoch = ws.cpus.Epoch(r.Worker)
	}
	if have := count(r.Ready); have >= r.Need {
		ws.answer(ws.next, r, have, false, epoch) // at once: nothing to record
		return ws.next
	}
	ws.open(&waitReq[R]{ID: ws.next, Request: r, epoch: epoch})
	return ws.next
}

func count(ready []bool) int {
	n := 0
	for _, ok := range ready {
		if ok {
			n++
		}
	}
	return n
}

// open counts q's ready objects and answers it, or registers its waiting
// slots and blocks its worker.
func (ws *Waits[R]) open(q *waitReq[R]) {
	q.have = count(q.Ready)
	if q.have >= q.Need {
		ws.emit(q, false)
		return
	}
	ws.reqs[q.ID] = q
	for i, o := range q.Objects {
		if !q.Ready[i] {
			ws.by[o] = append(ws.by[o], slot{q.ID, i})
		}
	}
	if q.Lends {
		// Stamped with the epoch of the task that asked: if that task has
		// ended since (a reopened answer), Block and Unblock ignore it, so
		// it never lends the CPUs of the worker's next task.
		q.counts = true
		ws.cpus.Block(q.Worker, q.epoch)
	}
}

// Stored records that object id is readable (a value or an error): the
// requests waiting for it that now have what they need are answered.
func (ws *Waits[R]) Stored(id ids.ObjectID) {
	slots := ws.by[id]
	if len(slots) == 0 {
		return
	}
	delete(ws.by, id)
	for _, s := range slots {
		q := ws.reqs[s.id]
		if q == nil || q.parked || q.Ready[s.i] {
			continue
		}
		q.Ready[s.i] = true
		q.have++
		if q.have >= q.Need {
			ws.complete(q, false)
		}
	}
}

// Timeout is the end of request id's time: a Wait still waiting is
// answered with the objects ready now. It does nothing to a request
// answered already.
func (ws *Waits[R]) Timeout(id ReqID) {
	if q := ws.reqs[id]; q != nil && !q.parked {
		ws.complete(q, true)
	}
}

// Drop ends request id without an answer (its caller gave up).
func (ws *Waits[R]) Drop(id ReqID) {
	q := ws.reqs[id]
	if q == nil {
		return
	}
	ws.close(q)
	if q.parked {
		ps := ws.parked[q.Worker]
		for i, p := range ps {
			if p == q {
				ws.parked[q.Worker] = append(ps[:i:i], ps[i+1:]...)
				break
			}
		}
		if len(ws.parked[q.Worker]) == 0 {
			delete(ws.parked, q.Worker)
		}
	}
	if q.counts {
		q.counts = false
		ws.cpus.Unblock(q.Worker, q.epoch) // a Resume may follow, with nothing to answer
	}
}

// Reopen is an answer the caller could not send because object i of it is
// gone again (evicted between readiness and the answer): the request waits
// for it again, as if it had not been ready, under the same ID.
func (ws *Waits[R]) Reopen(a Answer[R], i int) {
	q := &waitReq[R]{ID: a.ID, Request: a.Request, epoch: a.epoch}
	q.Ready[i] = false
	ws.open(q)
}

// Resume is the scheduling core's Resume effect for worker w: it has its
// CPUs back, so its parked answers go out.
func (ws *Waits[R]) Resume(w WorkerID) {
	ps := ws.parked[w]
	delete(ws.parked, w)
	for _, q := range ps {
		delete(ws.reqs, q.ID)
		q.parked = false
		ws.emit(q, q.have < q.Need)
	}
}

// TaskEnded records that worker w's running task ended: the answers parked
// for it are dropped, as nobody waits for them. Its requests still waiting
// stay and are answered when they can be (their epoch is past, so they
// no longer count against the worker's next task).
func (ws *Waits[R]) TaskEnded(w WorkerID) {
	for _, q := range ws.parked[w] {
		delete(ws.reqs, q.ID)
	}
	delete(ws.parked, w)
}

// WorkerGone drops every request of worker w, which died.
func (ws *Waits[R]) WorkerGone(w WorkerID) {
	for _, q := range ws.reqs {
		if q.Worker == w {
			ws.close(q)
		}
	}
	delete(ws.parked, w)
}

// complete answers q, or parks it while its worker waits for its CPUs.
func (ws *Waits[R]) complete(q *waitReq[R], timedOut bool) {
	ws.close(q)
	if q.counts {
		q.counts = false
		if !ws.cpus.Unblock(q.Worker, q.epoch) {
			q.parked = true
			ws.reqs[q.ID] = q
			ws.parked[q.Worker] = append(ws.parked[q.Worker], q)
			return
		}
	}
	ws.emit(q, timedOut)
}

// close forgets q and its waiting slots.
func (ws *Waits[R]) close(q *waitReq[R]) {
	delete(ws.reqs, q.ID)
	if q.parked {
		return
	}
	for i, o := range q.Objects {
		if q.Ready[i] {
			continue
		}
		s := ws.by[o]
		for j, x := range s {
			if x.id == q.ID {
				s = append(s[:j:j], s[j+1:]...)
				break
			}
		}
		if len(s) == 0 {
			delete(ws.by, o)
		} else {
			ws.by[o] = s
		}
	}
}

// emit answers q. A Wait reports at most Need objects ready: the first
// ones, in the order asked.
func (ws *Waits[R]) emit(q *waitReq[R], timedOut bool) {
	ws.answer(q.ID, q.Request, q.have, timedOut, q.epoch)
}

func (ws *Waits[R]) answer(id ReqID, r Request[R], have int, timedOut bool, epoch uint64) {
	n := 0
	for i, ok := range r.Ready {
		if ok {
			n++
			if n > r.Need {
				r.Ready[i] = false
			}
		}
	}
	ws.out = append(ws.out, Answer[R]{ID: id, Request: r, TimedOut: timedOut && have < r.Need, epoch: epoch})
}

// Check verifies the invariants: every open request counts its ready
// objects right and is either waiting for fewer than it needs, with one
// slot per object not ready, or parked at its worker; every slot belongs to
// an open request.
func (ws *Waits[R]) Check() error {
	var errs []error
	slots := 0
	for o, s := range ws.by {
		if len(s) == 0 {
			errs = append(errs, fmt.Errorf("object %s: an empty list of waiters", o))
		}
		for _, x := range s {
			q := ws.reqs[x.id]
			switch {
			case q == nil:
				errs = append(errs, fmt.Errorf("object %s: waited for by request %d, which is closed", o, x.id))
			case q.parked || q.Ready[x.i] || q.Objects[x.i] != o:
				errs = append(errs, fmt.Errorf("object %s: a stale slot %d of request %d", o, x.i, x.id))
			}
			slots++
		}
	}
	parked := 0
	for w, ps := range ws.parked {
		for _, q := range ps {
			if ws.reqs[q.ID] != q || !q.parked || q.Worker != w {
				errs = append(errs, fmt.Errorf("request %d parked at worker %d is not open and parked there", q.ID, w))
			}
			parked++
		}
	}
	want := 0
	for id, q := range ws.reqs {
		have := 0
		for _, ok := range q.Ready {
			if ok {
				have++
			}
		}
		switch {
		case have != q.have:
			errs = append(errs, fmt.Errorf("request %d counts %d ready objects, has %d", id, q.have, have))
		case q.parked:
			parked--
		case have >= q.Need:
			errs = append(errs, fmt.Errorf("request %d has the %d objects it needs but waits", id, q.Need))
		default:
			want += len(q.Objects) - have
		}
		if q.counts && (q.parked || !q.Lends) {
			errs = append(errs, fmt.Errorf("request %d blocks worker %d but does not wait", id, q.Worker))
		}
	}
	if parked != 0 {
		errs = append(errs, errors.New("the parked requests and the parked lists disagree"))
	}
	if want != slots {
		errs = append(errs, fmt.Errorf("%d slots wait for objects, the waiting requests need %d", slots, want))
	}
	return errors.Join(errs...)
}
