package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// TestDecode: each message decodes to what a worker encoded (the layout of
// task's Msg* comments, written here as runtime/worker writes it), and a
// payload cut anywhere short is an error, never a value.
func TestDecode(t *testing.T) {
	tid := ids.TaskID{1, 2, 3}
	a, b := ids.ObjectID{4}, ids.ObjectID{5}
	appendIDs := func(p []byte, oids ...ids.ObjectID) []byte {
		p = wire.AppendUvarint(p, uint64(len(oids)))
		for _, id := range oids {
			p = append(p, id[:]...)
		}
		return p
	}
	result := func(ran bool) []byte {
		p := append(tid[:], 1) // retiring
		p = wire.AppendUvarint(p, 2)
		p = task.AppendObject(p, &task.Object{Data: []byte("x")})
		p = task.AppendObject(p, &task.Object{Shared: true, Size: 1 << 20})
		if ran {
			p = wire.AppendUvarint(p, 1500)
		}
		return p
	}
	actor := ids.ActorID{6}
	direct := func(typ byte) func([]byte) (any, error) {
		return func(p []byte) (any, error) { return DecodeDirect(typ, p) }
	}
	w := NewWorker(1, true)
	for _, tc := range []struct {
		name    string
		payload []byte
		decode  func([]byte) (any, error)
		want    any
		short   int // the shortest cut that is not an error (0: every cut is)
	}{
		{"result with its run time", result(true), func(p []byte) (any, error) {
			r, err := w.DecodeResult(p)
			return r, err
		}, Result{Task: tid, Retiring: true, Ran: 1500, Objects: []task.Object{{Data: []byte("x")}, {Shared: true, Size: 1 << 20}}}, len(result(false))},
		{"result from a worker that does not time", result(false), func(p []byte) (any, error) {
			r, err := w.DecodeResult(p)
			return r, err
		}, Result{Task: tid, Retiring: true, Ran: -1, Objects: []task.Object{{Data: []byte("x")}, {Shared: true, Size: 1 << 20}}}, 0},
		{"get", appendIDs(wire.AppendUvarint(nil, 7), a, b), func(p []byte) (any, error) { return DecodeRequest(task.MsgGet, p) },
			Request{ID: 7, Need: 2, Objects: []ids.ObjectID{a, b}}, 0},
		{"wait", appendIDs(wire.AppendUvarint(wire.AppendUvarint(wire.AppendUvarint(nil, 8), 1), uint64(time.Second)), a, b),
			func(p []byte) (any, error) { return DecodeRequest(task.MsgWait, p) },
			Request{ID: 8, Wait: true, Need: 1, Timeout: time.Second, Objects: []ids.ObjectID{a, b}}, 0},
		{"give back", append(wire.AppendUvarint(nil, 1), tid[:]...),
			func(p []byte) (any, error) { return DecodeTasks(p) }, map[ids.TaskID]bool{tid: true}, 0},
		{"checkpoint", wire.AppendBytes(append(append([]byte(nil), tid[:]...), 1), []byte("state")),
			func(p []byte) (any, error) { return DecodeCheckpoint(p) }, Checkpoint{After: tid, OK: true, Data: []byte("state")}, 0},
		{"failed checkpoint", wire.AppendString(append(append([]byte(nil), tid[:]...), 0), "disk full"),
			func(p []byte) (any, error) { return DecodeCheckpoint(p) }, Checkpoint{After: tid, Why: "disk full"}, 0},
		{"actor address asked", append(wire.AppendUvarint(nil, 9), actor[:]...), direct(task.MsgActorAddr), Direct{Req: 9, Actor: actor}, 0},
		{"actor address dialled", actor[:], direct(task.MsgDirectDialed), Direct{Actor: actor}, 0},
		{"direct address", wire.AppendString(nil, "10.0.0.2:7000"), direct(task.MsgDirectAddr), Direct{Addr: "10.0.0.2:7000"}, 0},
		{"promise", append([]byte{task.PromiseOn}, a[:]...), direct(task.MsgPromise), Direct{Promise: task.PromiseOn, Object: a}, 0},
		{"lease", task.AppendResources(wire.AppendUvarint(nil, 4), &task.Resources{CPU: 1}), direct(task.MsgLease),
			Direct{Req: 4, Res: &task.Resources{CPU: 1}}, 0},
		{"lease given back", wire.AppendUvarint(nil, 300), direct(task.MsgLeaseReturn), Direct{Leased: 300}, 0},
		{"one ID", a[:], func(p []byte) (any, error) {
			var id ids.ObjectID
			err := DecodeID(p, id[:])
			return id, err
		}, a, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.decode(tc.payload)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %+v, %v; want %+v", got, err, tc.want)
			}
			for cut := range len(tc.payload) {
				if cut == tc.short && cut > 0 {
					continue // a complete message without its optional tail
				}
				if got, err := tc.decode(tc.payload[:cut]); err == nil {
					t.Fatalf("cut to %d of %d bytes: decoded %+v, want an error", cut, len(tc.payload), got)
				}
			}
		})
	}
}

// TestWaitReply: a Wait's reply carries its number and one flag per object.
func TestWaitReply(t *testing.T) {
	d := wire.Dec{B: AppendWaitReply(nil, 9, []bool{true, false, true})}
	id, n := d.Uvarint(), d.Uvarint()
	flags := []byte{d.Byte(), d.Byte(), d.Byte()}
	if d.Err != nil || id != 9 || n != 3 || !reflect.DeepEqual(flags, []byte{1, 0, 1}) || len(d.B) != 0 {
		t.Fatalf("reply: id %d, %d flags %v, %d bytes left, %v", id, n, flags, len(d.B), d.Err)
	}
}
