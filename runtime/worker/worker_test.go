package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The remotes the tests run. Their bodies stand for a user's code.
const (
	echoFunc    = "workertest.echo"
	failFunc    = "workertest.fail"
	panicFunc   = "workertest.panic"
	twoFunc     = "workertest.two"
	limitedFunc = "workertest.limited"
	getFunc     = "workertest.get"
	accType     = "workertest.Acc"
	accAdd      = "workertest.Acc.Add"
)

// acc is the actor the tests create: it appends its calls' arguments.
type acc struct{ total string }

func init() {
	one := func(b []byte) [][]byte { return [][]byte{b} }
	task.Register(&task.Entry{Name: echoFunc, Kind: task.KindFunc, NumReturns: 1,
		Call: func(_ context.Context, args [][]byte, _ task.ResultSink) ([][]byte, error) {
			return one(append([]byte("echo:"), args[0]...)), nil
		}})
	task.Register(&task.Entry{Name: failFunc, Kind: task.KindFunc, NumReturns: 1,
		Call: func(context.Context, [][]byte, task.ResultSink) ([][]byte, error) {
			return nil, fmt.Errorf("reading the input: %w", task.ErrFreed)
		}})
	task.Register(&task.Entry{Name: panicFunc, Kind: task.KindFunc, NumReturns: 1,
		Call: func(context.Context, [][]byte, task.ResultSink) ([][]byte, error) { panic("boom") }})
	task.Register(&task.Entry{Name: twoFunc, Kind: task.KindFunc, NumReturns: 2,
		Call: func(context.Context, [][]byte, task.ResultSink) ([][]byte, error) {
			return [][]byte{[]byte("1"), []byte("2")}, nil
		}})
	task.Register(&task.Entry{Name: limitedFunc, Kind: task.KindFunc, NumReturns: 1, MaxCalls: 2,
		Call: func(context.Context, [][]byte, task.ResultSink) ([][]byte, error) { return one(nil), nil }})
	// getFunc gets the object its argument names, through the worker that
	// runs it, and returns "got:" and its value.
	task.Register(&task.Entry{Name: getFunc, Kind: task.KindFunc, NumReturns: 1,
		Call: func(ctx context.Context, args [][]byte, out task.ResultSink) ([][]byte, error) {
			w := out.(*Worker)
			var id ids.ObjectID
			copy(id[:], args[0])
			objs, err := w.Get(ctx, []ids.ObjectID{id})
			if err != nil {
				return nil, err
			}
			return one(append([]byte("got:"), objs[0].Data...)), nil
		}})
	task.Register(&task.Entry{Name: accType, Kind: task.KindActorCreate, NumReturns: 1,
		New: func(context.Context, [][]byte) (any, error) { return &acc{}, nil }})
	task.Register(&task.Entry{Name: accAdd, Kind: task.KindActorMethod, NumReturns: 1,
		Method: func(_ context.Context, self any, args [][]byte, _ task.ResultSink) ([][]byte, error) {
			a := self.(*acc)
			a.total += string(args[0])
			return one([]byte(a.total)), nil
		}})
}

// spec returns a task of kind k calling fn on inline arguments.
func spec(k task.Kind, fn string, args ...string) *task.Spec {
	s := task.NewSpec(len(args))
	s.ID[0] = 1
	s.Kind, s.Func = k, fn
	if e, err := task.Lookup(fn); err == nil {
		s.NumReturns = int32(e.NumReturns)
	}
	for i, a := range args {
		s.Args[i].Data = []byte(a)
	}
	return s
}

// TestExec runs tasks on a worker without a connection: their values, their
// errors and when the worker must retire.
func TestExec(t *testing.T) {
	tests := []struct {
		name    string
		specs   []*task.Spec // run in order; the last one's results are checked
		want    []string     // the last task's returns
		wantErr error        // the last task's error must be this (errors.Is)
		wantMsg string       // the last task's error message must contain this
		retire  bool
	}{
		{name: "a function's value", specs: []*task.Spec{spec(task.KindFunc, echoFunc, "x")}, want: []string{"echo:x"}},
		{name: "two returns", specs: []*task.Spec{spec(task.KindFunc, twoFunc)}, want: []string{"1", "2"}},
		{name: "a returned error keeps its sentinel", specs: []*task.Spec{spec(task.KindFunc, failFunc)},
			wantErr: task.ErrFreed, wantMsg: "reading the input"},
		{name: "a panic is the task's error, not the worker's end", specs: []*task.Spec{spec(task.KindFunc, panicFunc)},
			wantMsg: "panic: boom"},
		{name: "an unregistered function", specs: []*task.Spec{spec(task.KindFunc, "workertest.nobody")},
			wantMsg: "is not registered"},
		{name: "MaxCalls: the worker retires after its second call", specs: []*task.Spec{
			spec(task.KindFunc, limitedFunc), spec(task.KindFunc, limitedFunc)}, want: []string{""}, retire: true},
		{name: "an actor keeps its state between calls", specs: []*task.Spec{
			spec(task.KindActorCreate, accType), spec(task.KindActorMethod, accAdd, "a"), spec(task.KindActorMethod, accAdd, "b")},
			want: []string{"ab"}},
		{name: "a method call on a worker without an actor", specs: []*task.Spec{spec(task.KindActorMethod, accAdd, "a")},
			wantMsg: "hosts no actor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Worker{name: "worker 1 (test)", ctx: context.Background(), reqs: map[uint64]chan []byte{}, calls: map[string]int{}}
			var objs []task.Object
			var retire bool
			for i, s := range tt.specs {
				if retire {
					t.Fatalf("the worker retired before task %d", i)
				}
				objs, retire = w.exec(s)
			}
			if retire != tt.retire {
				t.Errorf("retire = %v, want %v", retire, tt.retire)
			}
			last := tt.specs[len(tt.specs)-1]
			if len(objs) != last.Returns() {
				t.Fatalf("%d returns, want %d", len(objs), last.Returns())
			}
			if tt.wantErr != nil || tt.wantMsg != "" {
				e := objs[0].Err
				if e == nil {
					t.Fatalf("no error; returns %q", objs[0].Data)
				}
				if tt.wantErr != nil && !errors.Is(e, tt.wantErr) {
					t.Errorf("error %v is not %v", e, tt.wantErr)
				}
				if !strings.Contains(e.Error(), tt.wantMsg) || e.Function != last.Func {
					t.Errorf("error %q of %q, want one of %q saying %q", e.Error(), e.Function, last.Func, tt.wantMsg)
				}
				return
			}
			for i, o := range objs {
				if o.Err != nil || string(o.Data) != tt.want[i] {
					t.Errorf("return %d = %q, %v; want %q", i, o.Data, o.Err, tt.want[i])
				}
			}
		})
	}
}

// TestServe plays the driver on a real socket: the worker connects with
// the environment the driver gives it, runs a task whose Get the driver
// answers, sends its result and exits when told to.
// served connects a worker (number 7) to a driver's socket the test
// holds, with the shared-memory handshake done and its reader running. It
// returns the worker, the driver's end, a receive that fails the test
// unless the next message has type want, and the codes the worker exits
// with (its exit ends the calling goroutine instead of the process).
func served(t *testing.T) (*Worker, *wire.Conn, func(want byte) wire.Dec, chan int) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "node.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv(task.EnvSocket, sock)
	t.Setenv(task.EnvWorker, "7")
	t.Setenv(task.EnvStore, "")

	type connected struct {
		w   *Worker
		err error
	}
	ch := make(chan connected, 1)
	go func() {
		w, err := Connect()
		ch <- connected{w, err}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	dc := wire.New(c)
	t.Cleanup(func() { dc.Abort() })
	recv := func(want byte) wire.Dec {
		t.Helper()
		typ, payload, err := dc.Recv()
		if err != nil || typ != want {
			t.Fatalf("driver got message type %d (%v), want %d", typ, err, want)
		}
		return wire.Dec{B: payload}
	}
	hello := recv(task.MsgHello)
	if id := hello.Uvarint(); id != 7 {
		t.Fatalf("hello from worker %d, want 7", id)
	}
	if err := dc.Offer(); err != nil {
		t.Fatal(err)
	}
	cw := <-ch
	if cw.err != nil {
		t.Fatalf("connect: %v", cw.err)
	}
	w := cw.w
	exited := make(chan int, 1)
	w.exit = func(code int) {
		exited <- code
		runtime.Goexit()
	}
	w.reading = true // as Serve does, without blocking for good once the role moves
	go w.read()
	return w, dc, recv, exited
}

func TestServe(t *testing.T) {
	_, dc, recv, exited := served(t)

	var oid ids.ObjectID
	oid[0] = 42
	s := spec(task.KindFunc, getFunc, string(oid[:]))
	if err := dc.Send(task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) }); err != nil {
		t.Fatal(err)
	}
	get := recv(task.MsgGet)
	rid, n := get.Uvarint(), get.Count()
	var asked ids.ObjectID
	get.Fixed(asked[:])
	if get.Err != nil || n != 1 || asked != oid {
		t.Fatalf("worker's Get asks for %d objects (%s, %v), want %s", n, asked, get.Err, oid)
	}
	if err := dc.Send(task.MsgGetReply, func(b []byte) []byte {
		b = wire.AppendUvarint(b, rid)
		b = wire.AppendUvarint(b, 1)
		return task.AppendObject(b, &task.Object{Data: []byte("v")})
	}); err != nil {
		t.Fatal(err)
	}
	res := recv(task.MsgResult)
	var tid ids.TaskID
	res.Fixed(tid[:])
	retiring, cnt := res.Byte(), res.Count()
	o := task.DecodeObject(&res)
	if res.Err != nil || tid != s.ID || retiring != 0 || cnt != 1 || o.Err != nil || string(o.Data) != "got:v" {
		t.Fatalf("result of %s (retiring %d, %d objects, %v): %q, %v; want %s: %q", tid, retiring, cnt, res.Err, o.Data, o.Err, s.ID, "got:v")
	}
	if err := dc.Send(task.MsgExit, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not exit when told to")
	}
}
