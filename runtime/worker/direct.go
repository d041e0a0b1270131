package worker

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Direct actor calls, the caller's side (on unless task.EnvDirect is "0"; the
// callee's side is direct_callee.go, the driver's runtime/node/direct.go).
//
// An actor that calls another actor asks the driver once where the callee
// takes direct calls (task.MsgActorAddr), connects to it and sends its
// calls (MsgExec) and receives their results (MsgResult) over that one
// connection: the driver's lock sees none of it. One connection per caller
// and callee keeps the caller's calls in the order it made them, which is
// the order Gray promises. Calls made while the question is open wait here,
// in order; if the answer is "through the driver" (an actor that may be
// restarted or checkpoints, a dead one, one on a Unix socket of another
// machine), they and every later call to that actor go through the driver,
// as without this feature: switching paths back and forth could reorder
// them.
//
// The caller owns the results of its direct calls: they stay in this
// process, and its Gets and Waits are answered here. A result that escapes
// (a reference to it passed to a task or actor, put or returned inside a
// value) is first published to the driver (a Put under its ID, waiting for
// it to arrive if need be), so whoever gets the reference finds it there.
// A result whose value holds references, or of a call whose arguments held
// some, is always published: the driver keeps those references for it
// (MsgContain) and frees them when it is dropped.
//
// Failures: when the connection ends (the callee's process died or was
// killed), the calls without a result fail with ErrActorDead, as calls the
// driver had sent to a dead actor's process do, and later calls go through
// the driver, which knows the actor dead by then or soon. Only actors
// without restarts are called directly, so nothing is replayed here.
type directCalls struct {
	w *Worker

	mu      sync.Mutex
	callees map[ids.ActorID]*callee
	owned   map[ids.ObjectID]*owned
	// changed is closed and replaced when an owned result arrives while a
	// Wait watches (watchers > 0), so it can watch many of them.
	changed  chan struct{}
	watchers int
	seq      uint64 // calls owned so far: owned.seq
	// contains are the first returns of calls being made whose argument
	// values hold references (MsgContain was sent for them): such a
	// result is published when it arrives, see above.
	contains map[ids.ObjectID]bool

	pubMu sync.Mutex // orders publications before the messages they precede

	actors  bool   // direct actor calls are on (task.EnvDirect)
	leasing bool   // leases for function tasks are on (task.EnvLeases, lease.go)
	leases  leases // lease.go
}

// errMalformed marks the end of a direct connection by a message that
// could not be decoded (the peer may live on).
var errMalformed = errors.New("malformed message on a direct connection")

// The paths of a callee.
const (
	pathAsking = iota // the driver has not answered yet: calls wait here
	pathDirect        // calls go over conn
	pathDriver        // calls go through the driver
)

// callee is one actor this process calls.
type callee struct {
	id     ids.ActorID
	path   int
	queued []*task.Spec // made while asking, in order
	conn   *wire.Conn   // pathDirect
	lease  *leaseState  // a leased worker for function tasks (lease.go); nil: an actor
	// An actor's Release (drainTo): sent counts its calls sent on conn
	// without a result yet; draining: the callee asked, so later calls go
	// through the driver and conn closes once sent is 0. Atomic, so a
	// result costs no lock more than before.
	sent     atomic.Int64
	draining atomic.Bool
}

// owned is the result of a direct call, or of a call made while asking.
type owned struct {
	done      chan struct{} // closed when obj is set, or viaDriver
	obj       task.Object
	viaDriver bool           // the call went through the driver after all: ask there
	published bool           // put to the driver
	promised  bool           // promised to the driver before it arrived (MsgPromise)
	publish   bool           // publish on arrival (its value or arguments hold references)
	contained bool           // its callee sent MsgContain for the call's returns
	dropped   bool           // the program dropped it before it arrived
	freed     bool           // the program freed it (gray.Free): obj says so
	args      []ids.ObjectID // reference arguments held in the driver until the result (first return only)
	c         *callee        // the actor called
	fn        string         // the method, for errors
	seq       uint64         // its call's place among this process's owned calls
	leased    bool           // a function task sent to a lease (lease.go)
}

// newDirectCalls returns the caller's state, or nil when direct calls and
// leases are off.
func newDirectCalls(w *Worker) *directCalls {
	actors, leasing := task.DirectOn(), task.LeasesOn()
	if !actors && !leasing {
		return nil
	}
	return &directCalls{w: w, callees: map[ids.ActorID]*callee{}, owned: map[ids.ObjectID]*owned{},
		changed: make(chan struct{}), contains: map[ids.ObjectID]bool{},
		actors: actors, leasing: leasing, leases: leases{shapes: map[string]*shape{}, byEntry: map[*task.Entry]*shape{}, spare: map[string]*callee{}}}
}

// submit sends s directly, or queues it until the driver says where its
// actor is, and reports whether it did; false: s goes through the driver.
func (dc *directCalls) submit(s *task.Spec) (bool, error) {
	w := dc.w
	if s.Kind == task.KindFunc && dc.leasing {
		// Owned results it takes go to the driver first: the leased
		// worker reads its arguments there.
		if err := dc.publishArgs(s); err != nil {
			return false, err
		}
		if dc.submitTask(s) {
			return true, nil
		}
		dc.mu.Lock()
		delete(dc.contains, s.Return(0))
		dc.mu.Unlock()
		return false, nil
	}
	if s.Kind != task.KindActorMethod || !w.isActor || !dc.actors {
		dc.mu.Lock()
		delete(dc.contains, s.Return(0))
		dc.mu.Unlock()
		return false, dc.publishArgs(s)
	}
	// Results of this process's direct calls that s takes as arguments
	// go to the driver first: the callee reads its arguments there.
	if err := dc.publishArgs(s); err != nil {
		return false, err
	}
	dc.mu.Lock()
	c := dc.callees[s.Actor()]
	if c == nil {
		c = &callee{id: s.Actor()}
		dc.callees[c.id] = c
		go dc.ask(c) // owned by the question: it ends with the answer
	}
	if c.path == pathDriver || c.draining.Load() {
		delete(dc.contains, s.Return(0))
		dc.mu.Unlock()
		return false, nil
	}
	dc.own(c, s)
	if c.path == pathAsking {
		c.queued = append(c.queued, s)
		dc.mu.Unlock()
		return true, nil
	}
	err := dc.send(c, s)
	dc.mu.Unlock()
	if err != nil {
		dc.lost(c, err)
	}
	return true, nil
}

// own registers the returns of s, a call of c about to go direct (or to
// wait for the answer), as owned here. Called under dc.mu.
func (dc *directCalls) own(c *callee, s *task.Spec) {
	pub := dc.contains[s.Return(0)]
	delete(dc.contains, s.Return(0))
	dc.seq++
	for i := range s.Returns() {
		dc.owned[s.Return(i)] = &owned{done: make(chan struct{}), publish: pub, c: c, fn: s.Func, seq: dc.seq}
	}
	var refs []ids.ObjectID
	for _, a := range s.Args {
		if a.IsRef {
			refs = append(refs, a.Ref)
		}
	}
	dc.owned[s.Return(0)].args = refs
}

// send writes call s to c's connection, after holding its reference
// arguments in the driver (dropped when its result arrives): the program
// may drop its own references before the callee reads them. Called under
// dc.mu, which keeps the calls in order.
func (dc *directCalls) send(c *callee, s *task.Spec) error {
	if o := dc.owned[s.Return(0)]; o != nil && len(o.args) > 0 {
		dc.w.hold(o.args)
	}
	for i := range s.Args {
		s.Args[i].Keep = false // the callee reads it through the driver and keeps a copy
	}
	if c.lease == nil {
		c.sent.Add(1)
	}
	return c.conn.Send(task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) })
}

// ask asks the driver where c takes direct calls, connects, and sends
// the calls made meanwhile one way or the other.
func (dc *directCalls) ask(c *callee) {
	w := dc.w
	p, err := w.request(w.ctx, task.MsgActorAddr, func(b []byte) []byte { return append(b, c.id[:]...) })
	var addr string
	if err == nil {
		d := wire.Dec{B: p}
		addr = d.String()
		if d.Err != nil {
			addr = ""
		}
	}
	var conn *wire.Conn
	if addr != "" {
		conn, err = dialDirect(addr, false)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gray: %s: calling actor %s directly: %v; its calls go through the driver\n", w.name, c.id, err)
		}
		// Connected (the callee registered the connection before its
		// handshake ended) or not: a release's drain waits for this
		// (direct_drain.go). Either way it follows what it says: the
		// calls made meanwhile go on the connection, or through the
		// driver before it.
		defer func() { _ = w.conn.Send(task.MsgDirectDialed, func(b []byte) []byte { return append(b, c.id[:]...) }) }()
	}
	dc.mu.Lock()
	q := c.queued
	c.queued = nil
	if conn == nil {
		// Through the driver, in the order they were made.
		c.path = pathDriver
		for _, s := range q {
			for i := range s.Returns() {
				if o := dc.owned[s.Return(i)]; o != nil {
					delete(dc.owned, s.Return(i))
					dc.unpromise(s.Return(i), o)
					o.viaDriver = true
					close(o.done)
				}
			}
			_ = w.conn.Send(task.MsgSubmit, func(b []byte) []byte { return task.AppendSpec(b, s) })
		}
		dc.changedLocked() // a Wait watching them asks the driver now
		dc.mu.Unlock()
		return
	}
	c.path, c.conn = pathDirect, conn
	go dc.receive(c) // owned by the connection: it ends with it
	for _, s := range q {
		if err = dc.send(c, s); err != nil {
			break
		}
	}
	dc.mu.Unlock()
	if err != nil {
		dc.lost(c, err)
	}
}

// dialDirect connects to a callee's address. On one machine the
// connection then carries its frames through shared memory, as a worker's
// connection to its driver does (wire.Conn.Offer): the callee offers once
// it has the caller's hello, which says whether the caller holds a lease
// (lease.go) or calls an actor.
func dialDirect(addr string, lease bool) (*wire.Conn, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	conn := wire.New(c)
	if err := conn.Send(task.MsgHello, func(b []byte) []byte {
		if lease {
			return append(b, 1)
		}
		return b
	}); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.Answer(); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// receive reads c's results until its connection ends.
func (dc *directCalls) receive(c *callee) {
	for {
		typ, payload, err := c.conn.Recv()
		if err != nil {
			dc.lost(c, err)
			return
		}
		if typ == task.MsgGiveBack && c.lease != nil {
			if err := dc.givenBack(c, payload); err != nil {
				dc.lost(c, err)
				return
			}
			continue
		}
		if typ == task.MsgDirectDrain && c.lease == nil {
			if dc.drainTo(c) {
				return
			}
			continue
		}
		if typ != task.MsgResult {
			continue
		}
		d := wire.Dec{B: payload}
		var tid ids.TaskID
		d.Fixed(tid[:])
		cnt := d.Count()
		objs := make([]task.Object, cnt)
		for i := range objs {
			objs[i] = task.DecodeObject(&d)
		}
		refs := d.Byte() == 1 // the values hold references (the callee sent MsgContain)
		ran := time.Duration(d.Uvarint())
		if d.Err != nil {
			dc.lost(c, fmt.Errorf("%w: result: %w", errMalformed, d.Err))
			return
		}
		for i, o := range objs {
			dc.arrived(ids.Return(tid, i), o, refs)
		}
		if c.lease != nil {
			dc.mu.Lock()
			c.lease.blocked = false
			dc.leaseAnswered(c, tid, ran)
			dc.mu.Unlock()
		} else if dc.answeredCall(c) {
			return
		}
	}
}

// arrived stores an owned result and wakes whoever waits for it.
func (dc *directCalls) arrived(id ids.ObjectID, obj task.Object, refs bool) {
	dc.mu.Lock()
	o := dc.owned[id]
	if o == nil || isDone(o.done) {
		dc.mu.Unlock()
		return
	}
	if !o.freed { // a Free made before it arrived stands
		o.obj = obj
	}
	o.publish = o.publish || refs
	o.contained = refs
	args := o.args
	o.args = nil
	pub, gone := o.publish, o.dropped
	close(o.done)
	dc.changedLocked()
	dc.mu.Unlock()
	if len(args) > 0 {
		dc.w.dropIDs(args)
	}
	if pub {
		dc.publish(id)
		if gone {
			dc.w.dropIDs([]ids.ObjectID{id})
		}
	}
	if gone {
		dc.mu.Lock()
		delete(dc.owned, id)
		dc.mu.Unlock()
	}
}

// changedLocked wakes the Waits watching owned results: one arrived or
// went to the driver. Called under dc.mu.
func (dc *directCalls) changedLocked() {
	if dc.watchers > 0 {
		close(dc.changed)
		dc.changed = make(chan struct{})
	}
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// lost ends c's connection: its calls without a result fail with
// ErrActorDead, and later calls go through the driver.
func (dc *directCalls) lost(c *callee, why error) {
	if c.lease != nil {
		dc.leaseLost(c, errors.Is(why, errMalformed)) // its tasks go through the driver (lease.go)
		return
	}
	dc.mu.Lock()
	if c.path != pathDirect {
		dc.mu.Unlock()
		return
	}
	c.path = pathDriver
	conn := c.conn
	ended := map[ids.ObjectID]string{}
	for id, o := range dc.owned {
		if o.c == c && !isDone(o.done) {
			ended[id] = o.fn
		}
	}
	dc.mu.Unlock()
	conn.Close()
	for id, fn := range ended {
		te := &task.TaskError{Function: fn, Worker: dc.w.name,
			Message: fmt.Sprintf("actor %s is dead: the connection to its worker ended (%v)", c.id, why), Cause: task.ErrActorDead}
		dc.arrived(id, task.Object{Err: te}, false)
	}
}
