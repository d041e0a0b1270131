package worker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Leases for nested tasks, the owner's side (task.EnvLeases turns them on or
// off; the driver's books are runtime/direct, the leased worker's
// lease_callee.go). A worker that submits a function task asks the driver
// once for a lease on an idle worker with the resources the task needs,
// connects to it as a caller of direct actor calls does (direct.go), and
// sends it that task and every later one of the same resource shape: one
// request under the driver's lock per lease instead of one per task. The
// results are owned here like direct calls' (direct_owned.go): answered
// here, published to the driver before a reference to one leaves.
//
// Depth: the leased worker times each task and sends the time back with
// its result, and the owner keeps each function's mean (sched.RunTimes, as
// the driver does for its own packing). A lease holds one unanswered task
// of a function not known to be short (so long tasks spread over workers
// through further leases and the driver), or as many short ones as run in
// sched.PackBudget, as deep as the driver packs them; the
// short tasks of a burst past that wait here, up to leaseBacklog budgets
// of work, and go out as results come back, so a burst of a thousand
// no-ops runs on its lease without the driver. Past that, and for tasks
// not known to be short, the owner asks for another lease (up to
// maxLeases per shape), else sends them through the driver, which spreads
// long tasks over idle workers.
//
// A refused lease (no idle worker or resources free now: the driver never
// makes an asker wait) sends the waiting tasks through the driver, and the
// shape asks again only after leaseRetry. A lease goes back when nothing
// was sent to it for its shape's idle time after its last result: at
// first leaseIdle; doubled, up to leaseIdleMax, each time the shape asks
// again soon after a return (work keeps coming in bursts), and back to
// leaseIdle after a long quiet spell. The connection to a returned lease's
// worker is kept (up to maxSpare of them, for spareIdle) for the next
// lease on that worker.
//
// Failures: the leased worker's connection ends (its process died) — the
// tasks without a result are submitted again through the driver, so their
// results come from there, exactly once; its running task blocks in Get
// or Wait — it hands the tasks queued behind it back (MsgGiveBack) and
// they go through the driver, as the driver's own Recall does, with those
// waiting here, and the lease takes no more tasks until its next result;
// this process dies — the driver ends its leases (nothing of it escaped
// unpublished).
//
// Not leased: tasks that need GPUs (the GPU indices are the driver's to
// hand out per task), tasks with MaxCalls (their worker retires), and
// tasks of a process with leases off.

// maxLeases bounds the leases an owner holds per resource shape. Measured
// on a 2-core VM (benchmarks/results/leases-queue.md, "Leases for nested tasks"): with
// no bound and 16 tasks a lease, four clients of tiny tasks at --cpus 16
// took up to 16 leases, a process and a connection each, and cost 4-9x
// the CPU per task of the driver's path; a second lease per shape split
// a burst of short tasks over two workers where one keeps up. Short tasks
// past a lease's depth wait here instead (leaseBacklog); long ones go
// through the driver, which spreads them over idle workers.
const maxLeases = 1

// leaseBacklog is how many PackBudgets of short tasks may wait here for
// room in a lease before the rest go through the driver: tasks known to
// take under sched.PackShort each, so at most this many milliseconds of
// work wait behind one lease.
const leaseBacklog = 64

// leaseIdle and leaseIdleMax bound how long a lease with nothing in
// flight is kept for the next task: a loop of submit-then-Get costs one
// lease, not one per task, and a lease kept idle holds its worker from
// the driver's queue for at most leaseIdleMax.
const (
	leaseIdle    = 2 * time.Millisecond
	leaseIdleMax = 16 * time.Millisecond
)

// leaseRetry is how long a shape whose lease was refused goes through the
// driver before asking again.
const leaseRetry = 5 * time.Millisecond

// maxSpare and spareIdle bound the connections to workers of returned
// leases kept for the next lease on the same worker (a dial, a hello and
// the shared-memory offer saved per lease).
const (
	maxSpare  = 4
	spareIdle = time.Second
)

// leases is the owner's state of its leases, under directCalls.mu.
type leases struct {
	shapes   map[string]*shape      // by resource shape
	byEntry  map[*task.Entry]*shape // by function, for tasks with its resources (no key to format per task)
	spare    map[string]*callee     // connections of returned leases, by address
	runTimes sched.RunTimes[string]
}

// shape is the owner's state of the tasks of one resource shape.
type shape struct {
	res      task.Resources
	leases   []*callee    // granted and connected
	asking   bool         // a lease request is open
	waiting  []*task.Spec // made while it is, or while every lease is full, in order
	retry    time.Time    // refused: no request before this
	idle     time.Duration
	returned time.Time // the last idle return
}

// leaseState is a lease's part of a callee (nil for an actor).
type leaseState struct {
	id      uint64 // the driver's lease number
	addr    string // where the leased worker listens
	sh      *shape
	specs   map[ids.TaskID]*task.Spec // sent, not answered
	blocked bool                      // it gave tasks back: none until its next result
	gen     uint64                    // counts sends: an idle timer of an older one does nothing
}

// The path of a callee whose lease was returned and whose connection is
// kept (leases.spare).
const pathSpare = pathDriver + 1

// depth returns how many unanswered tasks of function fn a lease may hold.
func (l *leases) depth(fn string) int { return max(1, l.runTimes.Depth(fn)) }

// submitTask sends function task s to a lease of its shape, or waits for
// one, and reports whether it did; false: s goes through the driver.
func (dc *directCalls) submitTask(s *task.Spec) bool {
	e, err := task.Lookup(s.Func)
	if err != nil || e.MaxCalls != 0 {
		return false
	}
	own := s.OwnRes()
	if own != nil && own.GPU > 0 || own == nil && e.Res.GPU > 0 {
		return false
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	sh := dc.leases.byEntry[e]
	if own != nil || sh == nil {
		sh = dc.leases.shapeOf(task.Res(s, e))
		if own == nil {
			dc.leases.byEntry[e] = sh
		}
	}
	depth := dc.leases.depth(s.Func)
	if len(sh.waiting) == 0 {
		if c := sh.target(depth); c != nil {
			dc.ownLeased(s)
			dc.sendLeased(c, s)
			return true
		}
	}
	switch {
	case sh.asking:
	case len(sh.leases) > 0 && !sh.anyBlocked() && dc.leases.runTimes.Depth(s.Func) > 0 && len(sh.waiting) < leaseBacklog*depth:
		// Short: it waits here for room in a lease.
	case len(sh.leases) < maxLeases && !time.Now().Before(sh.retry):
		sh.ask(dc)
	default:
		return false
	}
	dc.ownLeased(s)
	sh.waiting = append(sh.waiting, s)
	return true
}

// shapeOf returns the shape of tasks that need res, making it.
func (l *leases) shapeOf(res task.Resources) *shape {
	key := res.String()
	sh := l.shapes[key]
	if sh == nil {
		sh = &shape{res: res, idle: leaseIdle}
		l.shapes[key] = sh
	}
	return sh
}

// ask starts a lease request for sh; called under dc.mu.
func (sh *shape) ask(dc *directCalls) {
	sh.asking = true
	now := time.Now()
	switch gap := now.Sub(sh.returned); {
	case gap < 4*sh.idle: // returned too soon: work comes in bursts
		sh.idle = min(2*sh.idle, leaseIdleMax)
	case gap > 8*leaseIdleMax:
		sh.idle = leaseIdle
	}
	go dc.askLease(sh) // owned by the request: it ends with the answer
}

// anyBlocked reports whether a lease of sh gave tasks back and has not
// answered since; called under dc.mu.
func (sh *shape) anyBlocked() bool {
	for _, c := range sh.leases {
		if c.lease.blocked {
			return true
		}
	}
	return false
}

// ownLeased registers the returns of s, about to go to a lease, as owned
// here; called under dc.mu.
func (dc *directCalls) ownLeased(s *task.Spec) {
	dc.own(nil, s)
	for i := range s.Returns() {
		dc.owned[s.Return(i)].leased = true
	}
}

// target returns the lease of sh with the fewest tasks in flight, if it
// holds fewer than depth; called under dc.mu.
func (sh *shape) target(depth int) *callee {
	var best *callee
	for _, c := range sh.leases {
		if c.lease.blocked || len(c.lease.specs) >= depth {
			continue
		}
		if best == nil || len(c.lease.specs) < len(best.lease.specs) {
			best = c
		}
	}
	return best
}

// sendLeased sends s, owned already, to lease c; called under dc.mu. A
// send that fails leaves s to lost, which the receiver calls.
func (dc *directCalls) sendLeased(c *callee, s *task.Spec) {
	for i := range s.Returns() {
		if o := dc.owned[s.Return(i)]; o != nil {
			o.c = c
		}
	}
	c.lease.specs[s.ID] = s
	c.lease.gen++
	_ = dc.send(c, s)
}

// fill sends the tasks waiting in sh to its leases while they have room;
// called under dc.mu.
func (dc *directCalls) fill(sh *shape) {
	n := 0
	for _, s := range sh.waiting {
		c := sh.target(dc.leases.depth(s.Func))
		if c == nil {
			break
		}
		dc.sendLeased(c, s)
		n++
	}
	if n > 0 {
		clear(sh.waiting[:n])
		sh.waiting = sh.waiting[n:]
	}
}

// flush sends the tasks waiting in sh through the driver; called under
// dc.mu.
func (dc *directCalls) flush(sh *shape) {
	for _, s := range sh.waiting {
		dc.viaDriver(s, false)
	}
	sh.waiting = nil
}

// askLease asks the driver for a lease for sh, connects to the worker (or
// takes the kept connection to it), and sends the tasks that waited.
func (dc *directCalls) askLease(sh *shape) {
	w := dc.w
	p, err := w.request(w.ctx, task.MsgLease, func(b []byte) []byte { return task.AppendResources(b, &sh.res) })
	var id uint64
	var addr string
	if err == nil {
		d := wire.Dec{B: p}
		id, addr = d.Uvarint(), d.String()
		if d.Err != nil {
			addr = ""
		}
	}
	var c *callee
	if addr != "" {
		dc.mu.Lock()
		if c = dc.leases.spare[addr]; c != nil {
			delete(dc.leases.spare, addr)
		}
		dc.mu.Unlock()
		if c == nil {
			conn, err := dialDirect(addr, true)
			if err != nil {
				fmt.Fprintf(os.Stderr, "gray: %s: connecting to a leased worker: %v; tasks go through the driver\n", w.name, err)
				dc.returnLease(id)
			} else {
				c = &callee{conn: conn, lease: &leaseState{addr: addr}}
				go dc.receive(c) // owned by the connection: it ends with it
			}
		}
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	sh.asking = false
	if c != nil {
		c.path = pathDirect
		c.lease.id, c.lease.sh, c.lease.blocked = id, sh, false
		c.lease.specs = map[ids.TaskID]*task.Spec{}
		c.lease.gen++
		sh.leases = append(sh.leases, c)
	} else {
		sh.retry = time.Now().Add(leaseRetry)
	}
	dc.fill(sh)
	if len(sh.waiting) == 0 {
		return
	}
	if c != nil && len(sh.leases) < maxLeases { // every lease is full: ask for one more
		sh.ask(dc)
		return
	}
	if c != nil && !sh.anyBlocked() && dc.leases.runTimes.Depth(sh.waiting[0].Func) > 0 {
		return // short tasks: they go out as results come back
	}
	dc.flush(sh)
}

// viaDriver submits owned task s through the driver after all; its
// results are asked of the driver from now on. held: its reference
// arguments were held for a send (dropped once the driver has the task).
// Called under dc.mu, which keeps the driver's messages in order.
func (dc *directCalls) viaDriver(s *task.Spec, held bool) {
	var args []ids.ObjectID
	for i := range s.Returns() {
		if o := dc.owned[s.Return(i)]; o != nil {
			delete(dc.owned, s.Return(i))
			dc.unpromise(s.Return(i), o)
			if i == 0 {
				args = o.args
			}
			o.viaDriver = true
			close(o.done)
		}
	}
	dc.changedLocked() // a Wait watching it asks the driver now
	_ = dc.w.conn.Send(task.MsgSubmit, func(b []byte) []byte { return task.AppendSpec(b, s) })
	if held && len(args) > 0 {
		dc.w.dropIDs(args)
	}
}

// leaseAnswered notes that lease c answered task tid (a result that took
// ran on the leased worker, or 0: the task given back), sends it what
// waits here, and arms the idle return once nothing is in flight. Called
// under dc.mu.
func (dc *directCalls) leaseAnswered(c *callee, tid ids.TaskID, ran time.Duration) {
	s := c.lease.specs[tid]
	if s == nil {
		return
	}
	delete(c.lease.specs, tid)
	if ran > 0 {
		dc.leases.runTimes.Ran(s.Func, ran)
	}
	if c.path != pathDirect {
		return
	}
	sh := c.lease.sh
	if len(sh.waiting) > 0 {
		dc.fill(sh)
	}
	if len(c.lease.specs) > 0 {
		return
	}
	gen := c.lease.gen
	time.AfterFunc(sh.idle, func() { dc.idle(c, gen) }) // owned by the lease: it ends the timer's use
}

// idle returns lease c if nothing was sent to it since gen, and keeps its
// connection for the next lease on that worker.
func (dc *directCalls) idle(c *callee, gen uint64) {
	dc.mu.Lock()
	if c.path != pathDirect || c.lease.gen != gen || len(c.lease.specs) > 0 {
		dc.mu.Unlock()
		return
	}
	dc.dropLease(c)
	c.lease.sh.returned = time.Now()
	id := c.lease.id
	// Returned before the connection is kept: the next grant of this
	// worker can only follow the return.
	dc.returnLease(id)
	var old *callee
	if len(dc.leases.spare) >= maxSpare {
		for _, x := range dc.leases.spare {
			old = x
			break
		}
		delete(dc.leases.spare, old.lease.addr)
	}
	c.path = pathSpare
	dc.leases.spare[c.lease.addr] = c
	gen = c.lease.gen
	dc.mu.Unlock()
	if old != nil {
		old.conn.Close()
	}
	time.AfterFunc(spareIdle, func() { dc.spareIdle(c, gen) }) // owned by the kept connection
}

// spareIdle closes the kept connection c unless a lease took it since gen.
func (dc *directCalls) spareIdle(c *callee, gen uint64) {
	dc.mu.Lock()
	if c.path != pathSpare || c.lease.gen != gen || dc.leases.spare[c.lease.addr] != c {
		dc.mu.Unlock()
		return
	}
	delete(dc.leases.spare, c.lease.addr)
	dc.mu.Unlock()
	c.conn.Close()
}

// dropLease takes c out of its shape; called under dc.mu.
func (dc *directCalls) dropLease(c *callee) {
	c.path = pathDriver
	sh := c.lease.sh
	for i, x := range sh.leases {
		if x == c {
			sh.leases = append(sh.leases[:i], sh.leases[i+1:]...)
			break
		}
	}
}

// returnLease gives lease id back to the driver.
func (dc *directCalls) returnLease(id uint64) {
	_ = dc.w.conn.Send(task.MsgLeaseReturn, func(b []byte) []byte { return wire.AppendUvarint(b, id) })
}

// givenBack handles the leased worker's MsgGiveBack: the tasks named go
// through the driver, with those waiting here for room, and c takes none
// until its next result.
func (dc *directCalls) givenBack(c *callee, payload []byte) error {
	d := wire.Dec{B: payload}
	n := d.Count()
	tids := make([]ids.TaskID, n)
	for i := range tids {
		d.Fixed(tids[i][:])
	}
	if d.Err != nil {
		return fmt.Errorf("%w: give-back: %w", errMalformed, d.Err)
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if c.path != pathDirect {
		return nil
	}
	c.lease.blocked = true
	dc.flush(c.lease.sh)
	for _, tid := range tids {
		if s := c.lease.specs[tid]; s != nil {
			dc.viaDriver(s, true)
			dc.leaseAnswered(c, tid, 0)
		}
	}
	return nil
}

// leaseLost handles the end of lease c's connection: the tasks without a
// result go through the driver, with those waiting here when no other
// lease of the shape is left. A connection ends with the leased worker's
// process, and the driver ends the lease when it learns of that death;
// returning it from here could reach the driver first, which would then
// hand the dead worker the very tasks sent again. Only a connection ended
// by a malformed message (broken) is returned from here.
func (dc *directCalls) leaseLost(c *callee, broken bool) {
	dc.mu.Lock()
	switch c.path {
	case pathSpare:
		if dc.leases.spare[c.lease.addr] == c {
			delete(dc.leases.spare, c.lease.addr)
		}
		c.path = pathDriver
		dc.mu.Unlock()
		c.conn.Close()
		return
	case pathDirect:
	default:
		dc.mu.Unlock()
		return
	}
	dc.dropLease(c)
	for tid, s := range c.lease.specs {
		delete(c.lease.specs, tid)
		dc.viaDriver(s, true)
	}
	if sh := c.lease.sh; len(sh.leases) == 0 && !sh.asking {
		dc.flush(sh)
	}
	dc.mu.Unlock()
	c.conn.Close()
	if broken {
		dc.returnLease(c.lease.id)
	}
}

// lendAfter is how long a task waits here for results of its leases
// before the driver lends its CPUs out (MsgOwnerBlocked). A wait that
// short costs no message; a longer one could otherwise deadlock where
// the driver's path would not: the tasks a leased worker gave back go
// through the driver and may need this task's CPUs.
const lendAfter = time.Millisecond

// awaitOne waits for owned result o. A lease's result waited for longer
// than lendAfter lends this task's CPUs while it waits.
func (dc *directCalls) awaitOne(ctx context.Context, o *owned) error {
	dc.mu.Lock()
	leased := o.leased
	dc.mu.Unlock()
	if !leased {
		select { // an actor's call: an actor keeps its resources
		case <-o.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t := time.NewTimer(lendAfter)
	defer t.Stop()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	_ = dc.w.conn.Send(task.MsgOwnerBlocked, nil)
	defer func() { _ = dc.w.conn.Send(task.MsgOwnerUnblocked, nil) }()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
