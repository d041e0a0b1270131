package sched

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
)

// The random tests drive a Waits beside the core, as the node does: Gets
// and Waits of running tasks and of the driver, objects stored and lost,
// timeouts, and answers that cannot be sent because an object went
// (Reopen). simWaits checks every answer as the asker would see it.

const simObjects = 12

// simReq is what the sim knows of one request.
type simReq struct {
	id       ReqID
	w        WorkerID
	epoch    uint64 // the worker's epoch when asked
	need     int
	get      bool
	answered int
	dropped  bool // its asker went: its worker died, or the driver gave up
	ended    bool // its task ended: a parked answer is dropped, a waiting one still comes
	atOnce   bool // answered when asked, without waiting (nor blocking)
}

type simWaits struct {
	ws     *Waits[int]
	stored map[ids.ObjectID]bool
	reqs   []*simReq // by payload - 1
}

func newSimWaits(c Lender) *simWaits {
	return &simWaits{ws: NewWaits[int](c), stored: map[ids.ObjectID]bool{}}
}

func simObj(k int) ids.ObjectID { return ids.ObjectID{byte(k), 9} }

// ask makes a Get or a Wait of worker w (NoWorker: the driver).
func (s *sim) ask(w WorkerID) {
	n := 1 + s.rng.IntN(4)
	r := Request[int]{Payload: len(s.w.reqs) + 1, Worker: w, Lends: w != NoWorker, Need: n, Ready: make([]bool, n)}
	for i := range n {
		o := simObj(s.rng.IntN(simObjects))
		r.Objects = append(r.Objects, o)
		r.Ready[i] = s.w.stored[o]
	}
	get := s.rng.IntN(2) == 0
	if !get {
		r.Need = 1 + s.rng.IntN(n)
	}
	q := &simReq{w: w, need: r.Need, get: get}
	if w != NoWorker {
		q.epoch = s.c.Epoch(w)
	}
	s.w.reqs = append(s.w.reqs, q)
	s.last = fmt.Sprintf("ask %d of worker %d (epoch %d, lending %v)", r.Payload, w, q.epoch, w != NoWorker && s.c.lending(w))
	q.id = s.w.ws.Add(r)
	q.atOnce = s.w.ws.Pending()
}

// open returns the requests not answered nor dropped for which keep is true.
func (s *sim) open(keep func(*simReq) bool) []*simReq {
	var out []*simReq
	for _, q := range s.w.reqs {
		if q.answered == 0 && !q.dropped && !q.ended && keep(q) {
			out = append(out, q)
		}
	}
	return out
}

// waitsStep is one random event of the Waits.
func (s *sim) waitsStep() {
	switch s.rng.IntN(6) {
	case 0, 1:
		if w, ok := s.pick(s.busy()); ok && s.rng.IntN(3) > 0 {
			s.ask(w)
		} else {
			s.ask(NoWorker)
		}
	case 2:
		o := simObj(s.rng.IntN(simObjects))
		s.w.stored[o] = true
		s.w.ws.Stored(o)
	case 3: // evicted: a Get answered now cannot be sent (Reopen)
		delete(s.w.stored, simObj(s.rng.IntN(simObjects)))
	case 4:
		if qs := s.open(func(q *simReq) bool { return !q.get }); len(qs) > 0 {
			s.w.ws.Timeout(qs[s.rng.IntN(len(qs))].id)
		}
	case 5:
		if qs := s.open(func(q *simReq) bool { return q.w == NoWorker }); len(qs) > 0 {
			q := qs[s.rng.IntN(len(qs))]
			q.dropped = true
			s.w.ws.Drop(q.id)
		}
	}
}

// answer checks one answer as its asker sees it, and sends it, or reopens
// a Get one of whose objects is gone again.
func (s *sim) answer(a Answer[int]) {
	q := s.w.reqs[a.Payload-1]
	if q.answered > 0 || q.dropped {
		s.t.Fatalf("after %s: request %d answered again (answered %d, dropped %v)", s.last, a.Payload, q.answered, q.dropped)
	}
	ready := 0
	for _, ok := range a.Ready {
		if ok {
			ready++
		}
	}
	if ready > q.need || (!a.TimedOut && ready < q.need) || (a.TimedOut && q.get) {
		s.t.Fatalf("after %s: request %d needs %d, answered with %d ready (timed out: %v)", s.last, a.Payload, q.need, ready, a.TimedOut)
	}
	if q.w != NoWorker && !q.ended && !q.atOnce && s.c.Epoch(q.w) == q.epoch && len(s.blocks[q.w]) == 0 && s.c.lending(q.w) &&
		len(s.open(func(o *simReq) bool { return o != q && o.w == q.w && o.epoch == q.epoch })) == 0 {
		s.t.Fatalf("after %s: worker %d answered while its CPUs are lent out (parked %v, request %+v)", s.last, q.w, s.parked[q.w], q)
	}
	if q.get {
		for i, o := range a.Objects {
			if !s.w.stored[o] {
				q.atOnce = false
				s.w.ws.Reopen(a, i)
				return
			}
		}
	}
	q.answered++
}

// taskEnded and workerGone tell the Waits, and mark what they drop.
func (s *sim) taskEnded(w WorkerID, epoch uint64) {
	// Parked answers of the ended task are dropped; the Waits decides
	// which were parked, so the sim only marks them may-be-dropped.
	for _, q := range s.w.reqs {
		if q.w == w && q.epoch == epoch && q.answered == 0 {
			q.ended = true
		}
	}
	s.w.ws.TaskEnded(w)
}

func (s *sim) workerGone(w WorkerID) {
	for _, q := range s.w.reqs {
		if q.w == w && q.answered == 0 {
			q.dropped = true
		}
	}
	s.w.ws.WorkerGone(w)
}

// checkWaits checks the Waits after a step, and at the end (final) that
// every request was answered once or dropped with its asker.
func (s *sim) checkWaits(final bool) {
	if err := s.w.ws.Check(); err != nil {
		s.t.Fatalf("after %s: %v", s.last, err)
	}
	if !final {
		return
	}
	for i := range simObjects {
		s.w.stored[simObj(i)] = true
		s.w.ws.Stored(simObj(i))
	}
	s.effects()
	if n := s.w.ws.Len(); n > 0 {
		s.t.Fatalf("%d requests still open at the end", n)
	}
	if qs := s.open(func(*simReq) bool { return true }); len(qs) > 0 {
		s.t.Fatalf("request %d (of %d) never answered", qs[0].id, len(s.w.reqs))
	}
}

// asked reports whether worker w's running task made a Get or Wait: then
// it has started.
func (s *sim) asked(w WorkerID) bool {
	e := s.c.Epoch(w)
	for _, q := range s.w.reqs {
		if q.w == w && q.epoch == e && !q.dropped {
			return true
		}
	}
	return false
}
