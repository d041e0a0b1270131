package worker

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Leases for nested tasks, the owner's side (task.EnvLeases turns them on;
// the driver's side is runtime/node/lease.go, the leased worker's
// lease_callee.go). A worker that submits a function task asks the driver
// once for a lease on an idle worker with the resources the task needs,
// connects to it as a caller of direct actor calls does (direct.go), and
// sends it that task and every later one of the same resource shape: one
// request under the driver's lock per lease instead of one per task. The
// results are owned here like direct calls' (direct_owned.go): answered
// here, published to the driver before a reference to one leaves.
//
// A lease holds at most leaseDepth tasks not yet answered; past that the
// owner asks for another lease, up to maxLeases per shape (tasks made
// meanwhile wait here), and sends the rest through the driver. A refused
// lease (no idle worker or resources free now: the driver never makes an
// asker wait) sends the waiting tasks through the driver, and the shape
// asks again only after leaseRetry. A lease goes back leaseIdle after its
// last result if no task came meanwhile.
//
// Failures: the leased worker's connection ends (its process died) — the
// tasks without a result are submitted again through the driver, so their
// results come from there, exactly once; its running task blocks in Get
// or Wait — it hands the tasks queued behind it back (MsgGiveBack) and
// they go through the driver, as the driver's own Recall does, and the
// lease takes no more tasks until its next result; this process dies —
// the driver ends its leases (nothing of it escaped unpublished).
//
// Not leased: tasks that need GPUs (the GPU indices are the driver's to
// hand out per task), tasks with MaxCalls (their worker retires), and
// tasks of a process with leases off.

// leaseDepth bounds the tasks sent to one lease and not yet answered: a
// burst of short tasks is pipelined without a round trip per task, and a
// longer burst asks for more leases rather than queue deep behind one.
const leaseDepth = 16

// maxLeases bounds the leases an owner holds per resource shape; past
// them (each full) its tasks go through the driver, which packs short
// tasks onto few workers and spreads long ones. Measured on a 2-core VM
// (benchmarks/README.md, "Leases for nested tasks"): with no bound, four
// clients of tiny tasks at --cpus 16 took up to 16 leases, a process and a
// connection each, and cost 4-9x the CPU per task of the driver's path.
const maxLeases = 1

// leaseIdle is how long a lease with nothing in flight is kept for the
// next task: a loop of submit-then-Get costs one lease, not one per task.
const leaseIdle = 2 * time.Millisecond

// leaseRetry is how long a shape whose lease was refused goes through the
// driver before asking again.
const leaseRetry = 5 * time.Millisecond

// shape is the owner's state of the tasks of one resource shape.
type shape struct {
	res     task.Resources
	leases  []*callee    // granted and connected
	asking  bool         // a lease request is open
	waiting []*task.Spec // made while it is, in order
	retry   time.Time    // refused: no request before this
}

// leaseState is a lease's part of a callee (nil for an actor).
type leaseState struct {
	id      uint64 // the driver's lease number
	sh      *shape
	specs   map[ids.TaskID]*task.Spec // sent, not answered
	blocked bool                      // it gave tasks back: none until its next result
	gen     uint64                    // counts sends: an idle timer of an older one does nothing
}

// submitTask sends function task s to a lease of its shape, or waits for
// one, and reports whether it did; false: s goes through the driver.
func (dc *directCalls) submitTask(s *task.Spec) bool {
	e, err := task.Lookup(s.Func)
	if err != nil || e.MaxCalls != 0 {
		return false
	}
	res := task.Res(s, e)
	if res.GPU > 0 {
		return false
	}
	key := res.String()
	dc.mu.Lock()
	defer dc.mu.Unlock()
	sh := dc.shapes[key]
	if sh == nil {
		sh = &shape{res: res}
		dc.shapes[key] = sh
	}
	if c := sh.target(); c != nil {
		dc.ownLeased(s)
		dc.sendLeased(c, s)
		return true
	}
	if !sh.asking && (len(sh.leases) >= maxLeases || time.Now().Before(sh.retry)) {
		return false
	}
	dc.ownLeased(s)
	sh.waiting = append(sh.waiting, s)
	if !sh.asking {
		sh.asking = true
		go dc.askLease(sh) // owned by the request: it ends with the answer
	}
	return true
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
// holds fewer than leaseDepth; called under dc.mu.
func (sh *shape) target() *callee {
	var best *callee
	for _, c := range sh.leases {
		if c.lease.blocked || len(c.lease.specs) >= leaseDepth {
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

// askLease asks the driver for a lease for sh, connects to the worker,
// and sends the tasks that waited.
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
	var conn *wire.Conn
	if addr != "" {
		if conn, err = dialDirect(addr, true); err != nil {
			fmt.Fprintf(os.Stderr, "gray: %s: connecting to a leased worker: %v; tasks go through the driver\n", w.name, err)
			dc.returnLease(id)
		}
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	sh.asking = false
	if conn != nil {
		c := &callee{path: pathDirect, conn: conn, lease: &leaseState{id: id, sh: sh, specs: map[ids.TaskID]*task.Spec{}}}
		sh.leases = append(sh.leases, c)
		go dc.receive(c) // owned by the connection: it ends with it
	} else {
		sh.retry = time.Now().Add(leaseRetry)
	}
	q := sh.waiting
	sh.waiting = nil
	for i, s := range q {
		if c := sh.target(); c != nil {
			dc.sendLeased(c, s)
			continue
		}
		if conn != nil && len(sh.leases) < maxLeases { // every lease is full: ask for one more
			sh.waiting = q[i:]
			sh.asking = true
			go dc.askLease(sh)
			return
		}
		dc.viaDriver(s, false)
	}
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

// leaseAnswered notes that lease c answered task tid (a result, or the
// task given back) and arms the idle return once nothing is in flight.
// Called under dc.mu.
func (dc *directCalls) leaseAnswered(c *callee, tid ids.TaskID) {
	delete(c.lease.specs, tid)
	if len(c.lease.specs) > 0 || c.path != pathDirect {
		return
	}
	gen := c.lease.gen
	time.AfterFunc(leaseIdle, func() { dc.idle(c, gen) }) // owned by the lease: it ends the timer's use
}

// idle returns lease c if nothing was sent to it since gen.
func (dc *directCalls) idle(c *callee, gen uint64) {
	dc.mu.Lock()
	if c.path != pathDirect || c.lease.gen != gen || len(c.lease.specs) > 0 {
		dc.mu.Unlock()
		return
	}
	dc.dropLease(c)
	dc.mu.Unlock()
	dc.returnLease(c.lease.id)
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
// through the driver, and c takes none until its next result.
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
	c.lease.blocked = true
	for _, tid := range tids {
		if s := c.lease.specs[tid]; s != nil {
			dc.viaDriver(s, true)
			dc.leaseAnswered(c, tid)
		}
	}
	return nil
}

// leaseLost handles the end of lease c's connection: the tasks without a
// result go through the driver. A connection ends with the leased
// worker's process, and the driver ends the lease when it learns of that
// death; returning it from here could reach the driver first, which would
// then hand the dead worker the very tasks sent again. Only a connection
// ended by a malformed message (broken) is returned from here.
func (dc *directCalls) leaseLost(c *callee, broken bool) {
	dc.mu.Lock()
	if c.path != pathDirect {
		dc.mu.Unlock()
		return
	}
	dc.dropLease(c)
	for tid, s := range c.lease.specs {
		delete(c.lease.specs, tid)
		dc.viaDriver(s, true)
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
