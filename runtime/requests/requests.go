// Package requests carries out the Get and Wait requests of the driver's
// program and of its workers' tasks. sched.Waits decides when each is
// answered; a Table makes the requests (which of their objects are
// readable now), waits for their answers (the driver's goroutine on a
// channel outside the node's lock, up to its context, the node's shutdown
// or a Wait's timeout; a worker's Wait timeout on a timer) and carries the
// answers out: the driver's Get reads its objects (objects.Keeper.Read,
// asking again for one evicted or pulled meanwhile), a worker's Get is
// answered with its objects pinned for its task (objects.Keeper.PinRead)
// or, when one was evicted since it became ready, waits for it again
// (sched.Waits.Reopen).
//
// The node (runtime/node) owns the Table and the Waits, and calls the
// Table under its lock, except Get and Wait, which take the lock
// themselves. What concerns a worker (is it dead, its replies, where its
// node pulls objects from, reading its connection while the driver
// waits) goes back through the small Workers interface, so the Table's
// tests (requests_test.go) play the node with tables of events and no
// process.
package requests

import (
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Request is one Get or Wait, the Table's record of it, which the Waits
// hands back in its answer. W is the node's worker; the zero W is the
// driver's program.
type Request[W comparable] struct {
	w     W
	id    uint64 // the worker's number for it, repeated in the reply
	wait  bool
	ids   []ids.ObjectID
	rq    sched.ReqID
	ready []bool        // set by the answer
	done  bool          // driver requests: answered
	ch    chan struct{} // driver requests: closed when answered
	timer *time.Timer   // a worker's Wait with a timeout
}

// answered reports whether a driver request was answered. It reads the
// channel Answer closes, so it needs no lock.
func (r *Request[W]) answered() bool {
	select {
	case <-r.ch:
		return true
	default:
		return false
	}
}

// Objects is what the Table reads of the driver's objects
// (objects.Keeper implements it), under the node's lock.
type Objects interface {
	// Have reports whether object id is readable now (an evicted one
	// starts its rebuild).
	Have(id ids.ObjectID) (task.Object, bool)
	// Read returns object id for the driver's Get, or a channel to wait
	// on before reading again.
	Read(id ids.ObjectID) (task.Object, <-chan struct{}, error)
	// PinRead pins the objects a worker's Get is answered with for its
	// task; it returns the index of one to wait for again, or -1.
	PinRead(h objtable.Holder, oids []ids.ObjectID) (reopen int, failed map[int]error)
}

// Workers is what the Table asks of the node about the workers that
// make requests, under the node's lock.
type Workers[W comparable] interface {
	// Dead reports whether worker w is gone: its answers are not sent.
	Dead(w W) bool
	// Holder is w as the object table knows it: its task holds the read
	// pins of its Gets.
	Holder(w W) objtable.Holder
	// Send queues message typ for w, written when the lock is released.
	Send(w W, typ byte, fn func([]byte) []byte)
	// Locate queues for w, before its reply, where its node may pull the
	// shared objects oids from.
	Locate(w W, oids []ids.ObjectID)
	// HelpFor returns, for a driver's Get of oids, a function that reads
	// the connection of the worker making the last of them until done
	// reports the answer came (pool.Worker.Help), or nil.
	HelpFor(oids []ids.ObjectID) func(done func() bool)
}

// Config is what a Table works on; every field must be set.
type Config[W comparable] struct {
	Waits   *sched.Waits[*Request[W]]
	Objects Objects
	Store   objects.Store // the index of the driver's objects, which replies carry
	Workers Workers[W]
	// Lock and Unlock take and release the node's lock, for the driver's
	// Get and Wait and for workers' Wait timeouts.
	Lock, Unlock func()
	// Step carries out the node's cores' effects, among them the Waits'
	// answers (through Answer).
	Step func()
	// Done is closed when the node shuts down (under its lock).
	Done <-chan struct{}
}

// Table carries out the requests of the driver and its workers.
type Table[W comparable] struct{ Config[W] }

// New returns a Table over cfg.
func New[W comparable](cfg Config[W]) *Table[W] { return &Table[W]{cfg} }

// add registers a Get (need = len) or Wait request of w with the Waits,
// and steps the node: a request whose objects are all readable is
// answered before add returns.
func (t *Table[W]) add(w W, id uint64, oids []ids.ObjectID, need int, wait bool, from sched.WorkerID, lends bool) *Request[W] {
	r := &Request[W]{w: w, id: id, wait: wait, ids: oids}
	var driver W
	if w == driver {
		r.ch = make(chan struct{})
	}
	q := sched.Request[*Request[W]]{Payload: r, Worker: from, Lends: lends, Objects: oids, Ready: make([]bool, len(oids)), Need: need}
	for i, o := range oids {
		if _, ok := t.Objects.Have(o); ok {
			q.Ready[i] = true
		}
	}
	r.rq = t.Waits.Add(q)
	t.Step()
	return r
}

// Ask makes worker w's request m (a MsgGet or MsgWait; from is w's ID
// in the scheduling core). lends: w runs a pool worker's task, which
// lends its CPUs while it waits (Ray 0.2's nested example needs this to
// finish with one CPU); an actor keeps its resources. A Wait's timeout
// is a timer that steps the Waits' Timeout under the node's lock.
func (t *Table[W]) Ask(w W, from sched.WorkerID, lends bool, m pool.Request) {
	r := t.add(w, m.ID, m.Objects, m.Need, m.Wait, from, lends)
	if m.Timeout > 0 && t.Waits.Open(r.rq) {
		r.timer = time.AfterFunc(m.Timeout, func() {
			t.Lock()
			t.Waits.Timeout(r.rq)
			t.Step()
			t.Unlock()
		})
	}
}

// Answer carries out an answer of the Waits: a driver request's channel
// closes; a worker gets its reply.
func (t *Table[W]) Answer(a sched.Answer[*Request[W]]) {
	r := a.Payload
	if r.timer != nil {
		r.timer.Stop()
	}
	r.ready = a.Ready
	if r.ch != nil {
		if !r.done {
			r.done = true
			close(r.ch)
		}
		return
	}
	if t.Workers.Dead(r.w) {
		return
	}
	t.reply(r, a)
}

// reply sends worker request r its answer a: a Wait's ready flags, or a
// Get's objects. Those in shared memory are pinned until the worker's
// task ends, so its mappings stay valid; one evicted since it became
// ready makes the request wait for it again (objects.Keeper.PinRead).
func (t *Table[W]) reply(r *Request[W], a sched.Answer[*Request[W]]) {
	w := r.w
	if r.wait {
		t.Workers.Send(w, task.MsgWaitReply, func(b []byte) []byte { return pool.AppendWaitReply(b, r.id, r.ready) })
		return
	}
	i, failed := t.Objects.PinRead(t.Workers.Holder(w), r.ids)
	if i >= 0 {
		t.Waits.Reopen(a, i)
		return
	}
	t.Workers.Locate(w, r.ids)
	t.Workers.Send(w, task.MsgGetReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, r.id)
		b = wire.AppendUvarint(b, uint64(len(r.ids)))
		for i, id := range r.ids {
			o, _ := t.Store.Get(id)
			if err := failed[i]; err != nil {
				o = objects.ReadError(id, err)
			}
			b = task.AppendObject(b, &o)
		}
		return b
	})
}
