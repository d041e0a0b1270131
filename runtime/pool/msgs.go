package pool

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The driver's side of the messages a worker sends most (task.Msg*): what
// they carry, decoded, so the node's handler reads as a table of what each
// means.

// Result is a MsgResult: what a task returned.
type Result struct {
	Task     ids.TaskID
	Retiring bool          // the worker exits after this task (a MaxCalls limit)
	Objects  []task.Object // the returns; valid until Worker.Handled
	Ran      int64         // how long the task ran on the worker (ns, its clock); -1: not said
}

// DecodeResult decodes a MsgResult of w. The objects are decoded into w's
// scratch, which serves every result (no allocation per task): the caller
// copies what it keeps and calls Handled once done. On w's reading role.
func (w *Worker) DecodeResult(payload []byte) (Result, error) {
	d := wire.Dec{B: payload}
	var r Result
	d.Fixed(r.Task[:])
	r.Retiring = d.Byte() == 1
	cnt := d.Count()
	objs := slices.Grow(w.results[:0], cnt)[:cnt]
	for i := range objs {
		objs[i] = task.DecodeObject(&d)
	}
	w.results = objs
	// The task's run time, when the worker says (a trailing field: see
	// worker.run).
	r.Ran = -1
	if d.Err == nil && len(d.B) > 0 {
		r.Ran = int64(d.Uvarint())
	}
	if d.Err != nil {
		clear(objs)
		return Result{}, d.Err
	}
	r.Objects = objs
	return r, nil
}

// Handled ends the handling of the result DecodeResult returned: its
// objects are let go (the scratch keeps no payload alive), and a helper
// waiting for w's next result (Help) stops.
func (w *Worker) Handled() {
	w.finished.Add(1)
	clear(w.results)
}

// Request is a MsgGet or MsgWait: a running task asks for objects.
type Request struct {
	ID      uint64 // the worker's number for it, repeated in the reply
	Wait    bool   // a Wait: answered with ready flags once Need are ready
	Need    int    // objects that must be ready (a Get: all)
	Timeout time.Duration
	Objects []ids.ObjectID
}

// DecodeRequest decodes a MsgGet or MsgWait (typ says which).
func DecodeRequest(typ byte, payload []byte) (Request, error) {
	d := wire.Dec{B: payload}
	r := Request{ID: d.Uvarint(), Wait: typ == task.MsgWait}
	if r.Wait {
		r.Need = int(d.Uvarint())
		r.Timeout = time.Duration(d.Uvarint())
	}
	r.Objects = make([]ids.ObjectID, d.Count())
	for i := range r.Objects {
		d.Fixed(r.Objects[i][:])
	}
	if !r.Wait {
		r.Need = len(r.Objects)
	}
	return r, d.Err
}

// AppendWaitReply appends the payload of a MsgWaitReply: request id's
// ready flags.
func AppendWaitReply(b []byte, id uint64, ready []bool) []byte {
	b = wire.AppendUvarint(b, id)
	b = wire.AppendUvarint(b, uint64(len(ready)))
	for _, ok := range ready {
		if ok {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// DecodeTasks decodes a MsgGiveBack: the tasks a worker hands back.
func DecodeTasks(payload []byte) (map[ids.TaskID]bool, error) {
	d := wire.Dec{B: payload}
	cnt := d.Count()
	back := make(map[ids.TaskID]bool, cnt)
	for range cnt {
		var id ids.TaskID
		d.Fixed(id[:])
		back[id] = true
	}
	return back, d.Err
}

// DecodeID decodes a message that carries one ID (MsgKillActor's actor)
// into dst.
func DecodeID(payload, dst []byte) error {
	d := wire.Dec{B: payload}
	d.Fixed(dst)
	return d.Err
}

// Checkpoint is a MsgCheckpoint: the state of a worker's actor after call
// After, or why the actor's Checkpoint failed.
type Checkpoint struct {
	After ids.TaskID
	OK    bool
	Data  []byte // the state (OK), a copy the caller may keep
	Why   string // why it failed (not OK)
}

// DecodeCheckpoint decodes a MsgCheckpoint.
func DecodeCheckpoint(payload []byte) (Checkpoint, error) {
	d := wire.Dec{B: payload}
	var c Checkpoint
	d.Fixed(c.After[:])
	c.OK = d.Byte() == 1
	if c.OK {
		c.Data = append([]byte(nil), d.Bytes()...)
	} else {
		c.Why = d.String()
	}
	return c, d.Err
}

// Direct is a message of direct actor calls or leases for nested tasks
// (runtime/direct decides what it means), decoded: the fields its type
// carries.
type Direct struct {
	Req     uint64          // the request to answer (MsgActorAddr, MsgLease)
	Actor   ids.ActorID     // whose address is asked (MsgActorAddr) or was dialled (MsgDirectDialed)
	Addr    string          // where the worker takes direct calls (MsgDirectAddr)
	Promise byte            // task.PromiseOn, PromiseOff or PromisePublished (MsgPromise)
	Object  ids.ObjectID    // the object promised (MsgPromise)
	Res     *task.Resources // what a lease asks for (MsgLease)
	Leased  sched.WorkerID  // the leased worker given back (MsgLeaseReturn)
}

// DecodeDirect decodes a MsgActorAddr, MsgDirectAddr, MsgDirectDialed,
// MsgPromise, MsgLease or MsgLeaseReturn; the other direct messages carry nothing.
func DecodeDirect(typ byte, payload []byte) (Direct, error) {
	d := wire.Dec{B: payload}
	var m Direct
	switch typ {
	case task.MsgActorAddr:
		m.Req = d.Uvarint()
		d.Fixed(m.Actor[:])
	case task.MsgDirectDialed:
		d.Fixed(m.Actor[:])
	case task.MsgDirectAddr:
		m.Addr = d.String()
	case task.MsgPromise:
		m.Promise = d.Byte()
		d.Fixed(m.Object[:])
	case task.MsgLease:
		m.Req = d.Uvarint()
		if m.Res = task.DecodeResources(&d); d.Err == nil && m.Res == nil {
			return m, errors.New("malformed lease request: no resources")
		}
	case task.MsgLeaseReturn:
		m.Leased = sched.WorkerID(d.Uvarint())
	}
	if d.Err != nil {
		return m, fmt.Errorf("malformed direct message %d: %w", typ, d.Err)
	}
	return m, nil
}
