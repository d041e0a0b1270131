package objects

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// fakeSender is worker 1 sending messages about objects: it writes down
// the replies queued for it and each release of the node's lock.
type fakeSender struct {
	log   *[]string
	dead  bool
	actor bool // it hosts the actor of the tests
	// contain claims a contain's children (the node's direct-call books
	// are runtime/direct's to test).
	contain func(parent ids.ObjectID, children []ids.ObjectID)
}

func (s *fakeSender) Worker() Worker {
	return Worker{Holder: objtable.WorkerHolder(1), Name: "worker 1", Node: 0}
}
func (s *fakeSender) Actor() (ids.ActorID, bool) { return actor, s.actor }
func (s *fakeSender) Dead() bool                 { return s.dead }
func (s *fakeSender) Unlock()                    { *s.log = append(*s.log, "unlock") }
func (s *fakeSender) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	s.contain(parent, children)
}
func (s *fakeSender) Reply(typ byte, fn func([]byte) []byte) {
	if typ != task.MsgReserveReply {
		*s.log = append(*s.log, fmt.Sprintf("reply of type %d", typ))
		return
	}
	d := wire.Dec{B: fn(nil)}
	rid, status, msg := d.Uvarint(), d.Byte(), d.String()
	*s.log = append(*s.log, fmt.Sprintf("room for request %d: %s%s", rid, []string{"ok", "exists", "failed: "}[status], msg))
}

// appendIDs is the list of object IDs that ends MsgDrop, MsgFree, MsgHold
// and MsgContain.
func appendIDs(p []byte, oids ...ids.ObjectID) []byte {
	p = wire.AppendUvarint(p, uint64(len(oids)))
	for _, id := range oids {
		p = append(p, id[:]...)
	}
	return p
}

// doMessages carries out the events of worker 1's messages ("msg-put a",
// "msg-drop a b", "msg-reserve r 4096", "msg-contain b a", "msg-cut
// drop a b"...); false: not one of them.
func (f *fixture) doMessages(w []string) bool {
	if f.sender == nil {
		f.sender = &fakeSender{log: &f.tasks.log, contain: f.k.Contain}
		f.k.lock = func() {}
	}
	var oids []ids.ObjectID
	for _, s := range w[1:] {
		if id, ok := objNames[s]; ok {
			oids = append(oids, id)
		}
	}
	cut := w[0] == "msg-cut" // msg-cut KIND ...: the message cut one byte short
	kind := strings.TrimPrefix(w[0], "msg-")
	if cut {
		kind = w[1]
	}
	var typ byte
	var p []byte
	switch kind {
	case "put": // put X: an inline value
		typ, p = task.MsgPut, task.AppendObject(append([]byte(nil), oids[0][:]...), &task.Object{Data: []byte("v")})
	case "drop":
		typ, p = task.MsgDrop, appendIDs(nil, oids...)
	case "free":
		typ, p = task.MsgFree, appendIDs(nil, oids...)
	case "hold":
		typ, p = task.MsgHold, appendIDs(nil, oids...)
	case "contain": // contain PARENT CHILD...
		typ, p = task.MsgContain, appendIDs(append([]byte(nil), oids[0][:]...), oids[1:]...)
	case "reserve": // reserve X SIZE, as request 7
		var size int
		fmt.Sscan(w[len(w)-1], &size)
		typ, p = task.MsgReserve, wire.AppendUvarint(append(wire.AppendUvarint(nil, 7), oids[0][:]...), uint64(size))
	case "release": // release X: the actor lets a kept argument go
		typ, p = task.MsgReleaseShared, append([]byte(nil), oids[0][:]...)
	case "dies":
		f.sender.dead = true
		return true
	case "hosts-actor":
		f.sender.actor = true
		return true
	default:
		return false
	}
	if cut {
		p = p[:len(p)-1]
	}
	if err := f.k.Handle(f.sender, typ, p); err != nil {
		f.tasks.log = append(f.tasks.log, "error: "+err.Error())
	}
	return true
}

// TestMessages: what a worker says about objects is carried out as the
// Keeper's own events would be, the node's lock released once per
// message (after a reply is queued), and a message cut short is an error
// that changes nothing (a drop's IDs before the cut are dropped).
func TestMessages(t *testing.T) {
	runAll(t, false, []scenario{
		{"a put is stored once, a drop frees it", []step{
			{"msg-put a", []string{"wake a", "unlock"}},
			{"msg-put a", []string{"unlock"}}, // a task run again puts again
			{"msg-drop a", []string{"unlock"}},
			{"exists a", []string{"a false"}},
		}},
		{"a free deletes at once", []step{
			{"put a", []string{"wake a"}},
			{"msg-free a", []string{"unlock"}},
			{"have a", []string{"have a: true: freed"}},
		}},
		{"a worker's holds each take one more drop", []step{
			{"put a", []string{"wake a"}},
			{"msg-hold a", []string{"unlock"}},
			{"drop a", nil},
			{"exists a", []string{"a true"}},
			{"msg-drop a", []string{"unlock"}},
			{"exists a", []string{"a false"}},
		}},
		{"a contained child lives as long as its parent", []step{
			{"put a", []string{"wake a"}},
			{"put b", []string{"wake b"}},
			{"msg-contain b a", []string{"unlock"}},
			{"drop a", nil},
			{"exists a", []string{"a true"}},
			{"drop b", nil},
			{"exists a b", []string{"a false, b false"}},
		}},
		{"room is reserved and answered", []step{
			{"msg-reserve r 4096", []string{"room for request 7: ok", "unlock"}},
		}},
		{"a result that exists already is not written again", []step{
			{"put-shared r 4096", []string{"wake r"}},
			{"msg-reserve r 4096", []string{"room for request 7: exists", "unlock"}},
		}},
		{"room reserved for a worker that died meanwhile is given back", []step{
			{"msg-dies", nil},
			{"msg-reserve r 4096", []string{"room for request 7: ok", "unlock"}},
			{"msg-reserve r 4096", []string{"room for request 7: ok", "unlock"}}, // free again
		}},
		{"an actor lets a kept argument go", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"keep a", []string{"kept a: true"}},
			{"drop a", nil},
			{"msg-release a", []string{"unlock"}}, // from a pool worker: not its to release
			{"recorded a", []string{"recorded 1, kept 1, pins 1"}},
			{"msg-hosts-actor", nil},
			{"msg-release a", []string{"unlock"}},
			{"exists a", []string{"a false"}},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"messages cut short", []step{
			{"put a", []string{"wake a"}},
			{"put b", []string{"wake b"}},
			{"msg-cut put c", []string{"error: " + wire.ErrShort.Error()}},
			{"exists c", []string{"c false"}},
			{"msg-cut hold a", []string{"error: " + wire.ErrShort.Error()}},
			{"msg-cut reserve r 4096", []string{"error: " + wire.ErrShort.Error()}},
			{"msg-cut release a", []string{"error: " + wire.ErrShort.Error()}},
			{"msg-cut drop a b", []string{"unlock", "error: " + wire.ErrShort.Error()}},
			{"exists a b", []string{"a false, b true"}},
		}},
	})
}

// TestDecodeMessages: each message about objects decodes to what a worker
// encoded (the layout of task's Msg* comments, written here as
// runtime/worker writes it), and a payload cut anywhere short is an
// error, never a value.
func TestDecodeMessages(t *testing.T) {
	a, b := ids.ObjectID{4}, ids.ObjectID{5}
	for _, tc := range []struct {
		name    string
		payload []byte
		decode  func([]byte) (any, error)
		want    any
	}{
		{"put", task.AppendObject(append([]byte(nil), a[:]...), &task.Object{Data: []byte("v")}),
			func(p []byte) (any, error) { return decodePut(p) }, putMsg{id: a, o: task.Object{Data: []byte("v")}}},
		{"reserve", wire.AppendUvarint(append(wire.AppendUvarint(nil, 3), b[:]...), 4096),
			func(p []byte) (any, error) { return decodeReserve(p) }, reserveMsg{req: 3, id: b, size: 4096}},
		{"drop", appendIDs(nil, a, b), func(p []byte) (any, error) {
			var got []ids.ObjectID
			err := eachID(p, func(id ids.ObjectID) { got = append(got, id) })
			return got, err
		}, []ids.ObjectID{a, b}},
		{"hold", appendIDs(nil, a, b), func(p []byte) (any, error) {
			_, list, err := decodeNested(task.MsgHold, p)
			return list, err
		}, []ids.ObjectID{a, b}},
		{"contain", appendIDs(append([]byte(nil), a[:]...), b), func(p []byte) (any, error) {
			parent, list, err := decodeNested(task.MsgContain, p)
			return [2]any{parent, list}, err
		}, [2]any{a, []ids.ObjectID{b}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.decode(tc.payload)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %+v, %v; want %+v", got, err, tc.want)
			}
			for cut := range len(tc.payload) {
				if got, err := tc.decode(tc.payload[:cut]); err == nil {
					t.Fatalf("cut to %d of %d bytes: decoded %+v, want an error", cut, len(tc.payload), got)
				}
			}
		})
	}
}
