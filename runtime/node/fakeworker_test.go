package node

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The tests of this package play the workers themselves: Config.startWorker
// runs a fakeWorker on a goroutine instead of starting a process, and the
// test scripts what it sends on the node's socket with the real protocol.

// echoFunc is the remote function the tests submit: one argument, one
// return, one CPU. Its body never runs: the fake worker answers for it.
const echoFunc = "nodetest.echo"

func init() {
	task.Register(&task.Entry{Name: echoFunc, Kind: task.KindFunc, NumReturns: 1, Res: task.Resources{CPU: 1}})
}

// wait is how long a test waits for a message before it fails; nothing
// asserts timings, it only keeps a broken node from hanging the test.
const wait = 5 * time.Second

// frame is one message from the node to a fake worker.
type frame struct {
	typ     byte
	payload []byte
}

// fakeWorker is one worker played by the test.
type fakeWorker struct {
	id   int
	conn *wire.Conn
	in   chan frame // what the node sent, in order; closed when the connection ends
}

// harness is a node whose workers are fakeWorkers.
type harness struct {
	t       *testing.T
	n       *Node
	workers chan *fakeWorker // each worker once it has connected
}

// newHarness starts a node with cpus CPUs and a pool of pool workers, and
// shuts it down when the test ends.
func newHarness(t *testing.T, cpus float64, pool int) *harness {
	t.Helper()
	return newHarnessWith(t, Config{Resources: task.Resources{CPU: cpus}, NumWorkers: pool})
}

// newHarnessWith starts a node configured by cfg, its workers played by
// the test.
func newHarnessWith(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, workers: make(chan *fakeWorker, 64)}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cfg.Output, cfg.startWorker = io.Discard, h.start
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	h.n = n
	h.check("start")
	return h
}

// start is Config.startWorker: it connects as worker id and plays it.
func (h *harness) start(sock string, id int) error {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return err
	}
	return h.play(c, id)
}

// play plays worker id on connection c (its process's life): hello, then
// forward what the node sends until the connection ends.
func (h *harness) play(c net.Conn, id int) error {
	conn := wire.New(c)
	if err := conn.Send(task.MsgHello, func(b []byte) []byte { return wire.AppendUvarint(b, uint64(id)) }); err != nil {
		c.Close()
		return err
	}
	if err := conn.Answer(); err != nil {
		c.Close()
		return err
	}
	fw := &fakeWorker{id: id, conn: conn, in: make(chan frame, 256)}
	h.workers <- fw
	defer close(fw.in)
	for {
		typ, payload, err := conn.Recv()
		if err != nil {
			return errors.New("killed by the test")
		}
		fw.in <- frame{typ, payload}
	}
}

// check fails the test if the node's invariants do not hold after step.
func (h *harness) check(step string) {
	h.t.Helper()
	if err := h.n.Check(); err != nil {
		h.t.Fatalf("after %s: %v", step, err)
	}
}

// worker returns the next worker to connect.
func (h *harness) worker() *fakeWorker {
	h.t.Helper()
	select {
	case fw := <-h.workers:
		return fw
	case <-time.After(wait):
		h.t.Fatal("no worker connected")
		return nil
	}
}

// submit submits echo(arg) and returns its spec.
func (h *harness) submit(arg task.Arg) *task.Spec {
	h.t.Helper()
	s := task.NewSpec(1)
	s.ID, s.Kind, s.Func, s.NumReturns = h.n.NewTaskID(), task.KindFunc, echoFunc, 1
	s.Args[0] = arg
	if err := h.n.Submit(s); err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	h.check("submit")
	return s
}

// get returns the driver's Get of id.
func (h *harness) get(id ids.ObjectID) task.Object {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	objs, err := h.n.Get(ctx, []ids.ObjectID{id})
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	h.check("get")
	return objs[0]
}

// getAsync gets id on a goroutine of its own; the object (or one with the
// Get's error) comes on the channel.
func (h *harness) getAsync(t *testing.T, id ids.ObjectID) <-chan task.Object {
	got := make(chan task.Object, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		objs, err := h.n.Get(ctx, []ids.ObjectID{id})
		if err != nil {
			got <- task.Object{Err: &task.TaskError{Message: err.Error(), Cause: err}}
			return
		}
		got <- objs[0]
	}()
	return got
}

// put stores an inline value under a new ID and returns the ID.
func (h *harness) put(data string) ids.ObjectID {
	h.t.Helper()
	id := h.n.NewPutID()
	if err := h.n.Put(id, task.Object{Data: []byte(data)}); err != nil {
		h.t.Fatalf("put: %v", err)
	}
	h.check("put")
	return id
}

// value is an inline argument.
func value(s string) task.Arg { return task.Arg{Data: []byte(s)} }

// ref is a reference argument.
func ref(id ids.ObjectID) task.Arg { return task.Arg{Ref: id, IsRef: true} }

// expect returns the payload of the next message, which must be of type typ.
func (fw *fakeWorker) expect(t *testing.T, typ byte) []byte {
	t.Helper()
	select {
	case f, ok := <-fw.in:
		if !ok {
			t.Fatalf("worker %d: connection ended while waiting for message type %d", fw.id, typ)
		}
		if f.typ != typ {
			t.Fatalf("worker %d: got message type %d, want %d", fw.id, f.typ, typ)
		}
		return f.payload
	case <-time.After(wait):
		t.Fatalf("worker %d: no message of type %d", fw.id, typ)
	}
	return nil
}

// exec returns the next task the node sends.
func (fw *fakeWorker) exec(t *testing.T) *task.Spec {
	t.Helper()
	d := wire.Dec{B: fw.expect(t, task.MsgExec)}
	s := task.DecodeSpec(&d)
	if d.Err != nil {
		t.Fatalf("decoding the task: %v", d.Err)
	}
	return s
}

// send sends one message, failing the test if it cannot.
func (fw *fakeWorker) send(t *testing.T, typ byte, fn func([]byte) []byte) {
	t.Helper()
	if err := fw.conn.Send(typ, fn); err != nil {
		t.Fatalf("worker %d: sending message type %d: %v", fw.id, typ, err)
	}
}

// result answers task s with one inline return.
func (fw *fakeWorker) result(t *testing.T, s *task.Spec, data string) {
	t.Helper()
	fw.send(t, task.MsgResult, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		b = append(b, 0) // not retiring
		b = wire.AppendUvarint(b, 1)
		return task.AppendObject(b, &task.Object{Data: []byte(data)})
	})
}

// objects sends a message of typ carrying request number rid (if not zero)
// and oids: MsgGet, MsgFree, MsgDrop.
func (fw *fakeWorker) objects(t *testing.T, typ byte, rid uint64, oids ...ids.ObjectID) {
	t.Helper()
	fw.send(t, typ, func(b []byte) []byte {
		if typ == task.MsgGet {
			b = wire.AppendUvarint(b, rid)
		}
		b = wire.AppendUvarint(b, uint64(len(oids)))
		for _, id := range oids {
			b = append(b, id[:]...)
		}
		return b
	})
}

// getReply returns the objects of the node's answer to Get request rid.
func (fw *fakeWorker) getReply(t *testing.T, rid uint64) []task.Object {
	t.Helper()
	d := wire.Dec{B: fw.expect(t, task.MsgGetReply)}
	if got := d.Uvarint(); got != rid {
		t.Fatalf("reply to request %d, want %d", got, rid)
	}
	objs := make([]task.Object, d.Count())
	for i := range objs {
		objs[i] = task.DecodeObject(&d)
	}
	if d.Err != nil {
		t.Fatalf("decoding the reply: %v", d.Err)
	}
	return objs
}

// die ends the worker's connection, as its process's death would.
func (fw *fakeWorker) die() { _ = fw.conn.Abort() }
