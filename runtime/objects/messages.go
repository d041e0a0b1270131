package objects

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// What workers say about objects: a value a task put (MsgPut), a
// reference dropped or an object freed (MsgDrop, MsgFree), room for a
// large result about to be written (MsgReserve), references decoded out
// of a value or nested in one (MsgHold, MsgContain), an actor's kept
// argument released (MsgReleaseShared). The node's message switch hands
// them to Handle, which decodes each and carries it out, so the node
// knows only that they concern objects.

// Sender is the worker a message came from, as Handle answers it. Its
// methods but Unlock are called under the node's lock.
type Sender interface {
	// Worker is who it is, for the objects it delivers and holds.
	Worker() Worker
	// Actor is the actor it hosts (false: a pool worker).
	Actor() (ids.ActorID, bool)
	// Dead reports whether it died.
	Dead() bool
	// Reply queues a message to it, written at Unlock.
	Reply(typ byte, fn func([]byte) []byte)
	// Contain carries out its MsgContain: object parent's value holds
	// children. The node decides whether parent claims them (Keeper.Contain):
	// a direct call's result can be freed before its callee's contain comes
	// (runtime/direct).
	Contain(parent ids.ObjectID, children []ids.ObjectID)
	// Unlock releases the node's lock and writes what was queued (while
	// more of its input is buffered, it may leave the replies queued for
	// the next Unlock).
	Unlock()
}

// Handle decodes and carries out the message typ (MsgPut, MsgDrop,
// MsgFree, MsgReserve, MsgHold, MsgContain or MsgReleaseShared) that
// worker from sent, taking the node's lock (Config.Lock) and
// releasing it with from.Unlock. It returns the error of a message that
// does not decode, which ends the worker's connection; nothing of it is
// carried out then, except the IDs of a MsgDrop or MsgFree before the
// cut. Drops, frees, holds and releases that come after Shut change
// nothing; a MsgReserve is still answered, so that its worker does not
// wait.
func (k *Keeper[T]) Handle(from Sender, typ byte, payload []byte) error {
	switch typ {
	case task.MsgPut:
		m, err := decodePut(payload)
		if err != nil {
			return err
		}
		k.lock()
		k.PutFrom(from.Worker(), m.id, m.o)
	case task.MsgDrop, task.MsgFree:
		k.lock()
		err := eachID(payload, func(id ids.ObjectID) {
			switch {
			case k.closed:
			case typ == task.MsgDrop:
				k.Drop(from.Worker().Holder, id)
			default:
				k.FreeNow(id)
			}
		})
		from.Unlock()
		return err
	case task.MsgReserve:
		m, err := decodeReserve(payload)
		if err != nil {
			return err
		}
		k.reserveFor(from, m.req, m.id, m.size)
	case task.MsgHold, task.MsgContain:
		parent, list, err := decodeNested(typ, payload)
		if err != nil {
			return err
		}
		k.lock()
		if !k.closed && typ == task.MsgContain {
			from.Contain(parent, list)
		} else if !k.closed {
			k.Hold(from.Worker().Holder, list)
		}
	case task.MsgReleaseShared:
		var id ids.ObjectID
		d := wire.Dec{B: payload}
		if d.Fixed(id[:]); d.Err != nil {
			return d.Err
		}
		k.lock()
		if a, ok := from.Actor(); ok {
			k.ReleaseOneKept(a, id)
		}
	default:
		return fmt.Errorf("message type %d is not about objects", typ)
	}
	from.Unlock()
	return nil
}

// reserveFor makes room in the shared-memory store for result id of size
// bytes, which worker from is about to write, and answers its request rid
// with a MsgReserveReply. The store is called without the node's lock
// (Reserve); room reserved for a worker that died meanwhile, or after
// Shut, is given back at once.
func (k *Keeper[T]) reserveFor(from Sender, rid uint64, id ids.ObjectID, size int64) {
	status, msg := k.Reserve(id, size)
	k.lock()
	if status == task.ReserveOK {
		if from.Dead() || k.closed {
			k.Abort(id)
		} else {
			k.Reserved(from.Worker().Holder, id)
		}
	}
	from.Reply(task.MsgReserveReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = append(b, status)
		return wire.AppendString(b, msg)
	})
}

// putMsg is a MsgPut: an object a worker's task put.
type putMsg struct {
	id ids.ObjectID
	o  task.Object
}

// decodePut decodes a MsgPut.
func decodePut(payload []byte) (putMsg, error) {
	d := wire.Dec{B: payload}
	var m putMsg
	d.Fixed(m.id[:])
	m.o = task.DecodeObject(&d)
	return m, d.Err
}

// reserveMsg is a MsgReserve: room a task asks for to write a result
// into.
type reserveMsg struct {
	req  uint64 // the worker's number for it, repeated in the reply
	id   ids.ObjectID
	size int64
}

// decodeReserve decodes a MsgReserve.
func decodeReserve(payload []byte) (reserveMsg, error) {
	d := wire.Dec{B: payload}
	m := reserveMsg{req: d.Uvarint()}
	d.Fixed(m.id[:])
	m.size = int64(d.Uvarint())
	return m, d.Err
}

// eachID calls fn with each object ID of a MsgDrop or MsgFree, in order,
// and returns the error of a payload cut short (fn has then seen the IDs
// before the cut).
func eachID(payload []byte, fn func(ids.ObjectID)) error {
	d := wire.Dec{B: payload}
	for range d.Count() {
		var id ids.ObjectID
		d.Fixed(id[:])
		if d.Err != nil {
			break
		}
		fn(id)
	}
	return d.Err
}

// decodeNested decodes a MsgHold (the references a worker decoded) or a
// MsgContain (the references inside object parent's value).
func decodeNested(typ byte, payload []byte) (parent ids.ObjectID, list []ids.ObjectID, err error) {
	d := wire.Dec{B: payload}
	if typ == task.MsgContain {
		d.Fixed(parent[:])
	}
	list = make([]ids.ObjectID, d.Count())
	for i := range list {
		d.Fixed(list[i][:])
	}
	return parent, list, d.Err
}
