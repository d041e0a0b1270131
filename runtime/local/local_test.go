package local

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

type counter struct{ n int }

func init() {
	// Arguments and results are decimal text: the tests need no codec.
	task.Register(&task.Entry{Name: "local.double", Kind: task.KindFunc, NumReturns: 1, Call: func(ctx context.Context, args [][]byte, _ task.ResultSink) ([][]byte, error) {
		if task.InfoFrom(ctx) == nil {
			return nil, errors.New("no task info in the context")
		}
		n, err := strconv.Atoi(string(args[0]))
		if err != nil {
			return nil, err
		}
		return [][]byte{[]byte(strconv.Itoa(2 * n))}, nil
	}})
	task.Register(&task.Entry{Name: "local.Counter", Kind: task.KindActorCreate, NumReturns: 1, New: func(ctx context.Context, args [][]byte) (any, error) {
		return &counter{}, nil
	}})
	task.Register(&task.Entry{Name: "local.Counter.incr", Kind: task.KindActorMethod, NumReturns: 1, Method: func(ctx context.Context, self any, args [][]byte, _ task.ResultSink) ([][]byte, error) {
		c := self.(*counter)
		c.n++
		return [][]byte{[]byte(strconv.Itoa(c.n))}, nil
	}})
}

func get(t *testing.T, l *Local, id ids.ObjectID) task.Object {
	t.Helper()
	objs, err := l.Get(context.Background(), []ids.ObjectID{id})
	if err != nil {
		t.Fatal(err)
	}
	return objs[0]
}

func TestTasksRunAtSubmission(t *testing.T) {
	l := New(Config{Seeded: true})
	cases := []struct {
		name string
		arg  task.Arg
		want string
		fail bool
	}{
		{"inline argument", task.Arg{Data: []byte("21")}, "42", false},
		{"bad argument", task.Arg{Data: []byte("x")}, "", true},
		{"missing reference", task.Arg{IsRef: true, Ref: l.NewPutID()}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &task.Spec{ID: l.NewTaskID(), Kind: task.KindFunc, Func: "local.double", NumReturns: 1, Args: []task.Arg{c.arg}}
			_ = l.Submit(s)
			o := get(t, l, s.Return(0))
			if c.fail != (o.Err != nil) || !c.fail && string(o.Data) != c.want {
				t.Errorf("result %q, error %v; want %q (failure: %v)", o.Data, o.Err, c.want, c.fail)
			}
		})
	}
	if n := len(l.Errors()); n != 2 {
		t.Errorf("%d errors logged, want 2", n)
	}
}

func TestActorsAndObjects(t *testing.T) {
	l := New(Config{})
	create := &task.Spec{ID: l.NewTaskID(), Kind: task.KindActorCreate, Func: "local.Counter", NumReturns: 1}
	if err := l.Submit(create); err != nil {
		t.Fatal(err)
	}
	call := func() task.Object {
		s := &task.Spec{ID: l.NewTaskID(), Kind: task.KindActorMethod, Func: "local.Counter.incr", NumReturns: 1}
		s.SetActor(create.ID)
		_ = l.Submit(s)
		return get(t, l, s.Return(0))
	}
	if o := call(); string(o.Data) != "1" {
		t.Fatalf("first call: %q %v", o.Data, o.Err)
	}
	if err := l.Kill(create.ID); err != nil {
		t.Fatal(err)
	}
	if o := call(); !errors.Is(o.Err, task.ErrActorDead) {
		t.Errorf("call after Kill: %v, want ErrActorDead", o.Err)
	}

	id := l.NewPutID()
	if err := l.Put(id, task.Object{Data: []byte("7")}); err != nil {
		t.Fatal(err)
	}
	if ready, err := l.Wait(context.Background(), []ids.ObjectID{id, l.NewPutID()}, 1, 0); err != nil || !ready[0] || ready[1] {
		t.Errorf("Wait: %v %v, want [true false]", ready, err)
	}
	if err := l.Free([]ids.ObjectID{id}); err != nil {
		t.Fatal(err)
	}
	if o := get(t, l, id); !errors.Is(o.Err, task.ErrFreed) {
		t.Errorf("Get after Free: %v, want ErrFreed", o.Err)
	}
	if total, free := l.Resources(); total.CPU <= 0 || free.CPU != total.CPU {
		t.Errorf("Resources: %v %v", total, free)
	}
	if err := l.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(l.NewPutID(), task.Object{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Shutdown: %v, want ErrClosed", err)
	}
}
