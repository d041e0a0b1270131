package requests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The tests play the node around a Table: its objects (readable, being
// pulled from another node, evicted, unpinnable), its workers (replies
// decoded as they would arrive) and the scheduling core's lending, with
// a table of events per case and what each leaves in the log. The
// driver's Get and Wait run on goroutines of their own, as the program's
// would; "got" and "waited" wait for their outcome.

type wk struct {
	name string
	id   sched.WorkerID
	dead bool
}

type fixture struct {
	t       *testing.T
	mu      sync.Mutex
	tab     *Table[*wk]
	waits   *sched.Waits[*Request[*wk]]
	store   *objects.MemStore
	workers map[string]*wk
	names   map[ids.ObjectID]string
	root    ids.TaskID
	n       uint64
	done    chan struct{}
	log     []string
	sent    chan string // replies sent to workers, decoded

	readable map[ids.ObjectID]bool
	pulling  map[ids.ObjectID]chan struct{} // Read says: wait for this pull
	evicted  map[ids.ObjectID]bool          // PinRead finds it evicted; Have starts its rebuild
	unpinned map[ids.ObjectID]bool          // PinRead fails for it

	ctx    context.Context
	cancel context.CancelFunc
	parked chan struct{} // a driver's Get is about to wait (HelpFor was asked)
	result chan string   // the driver's calls' outcomes
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, store: objects.NewMemStore(), workers: map[string]*wk{}, names: map[ids.ObjectID]string{},
		root: ids.Root(1, true), done: make(chan struct{}), sent: make(chan string, 16),
		readable: map[ids.ObjectID]bool{}, pulling: map[ids.ObjectID]chan struct{}{}, evicted: map[ids.ObjectID]bool{}, unpinned: map[ids.ObjectID]bool{},
		parked: make(chan struct{}, 1), result: make(chan string, 1)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.waits = sched.NewWaits[*Request[*wk]](lender{f})
	f.tab = New(Config[*wk]{Waits: f.waits, Objects: objs{f}, Store: f.store, Workers: askers{f},
		Lock: f.mu.Lock, Unlock: f.mu.Unlock, Step: f.step, Done: f.done})
	return f
}

func (f *fixture) step() {
	for a, ok := f.waits.Next(); ok; a, ok = f.waits.Next() {
		f.tab.Answer(a)
	}
}

func (f *fixture) obj(name string) ids.ObjectID {
	for id, n := range f.names {
		if n == name {
			return id
		}
	}
	f.n++
	id := ids.Put(f.root, f.n)
	f.names[id] = name
	return id
}

func (f *fixture) objs(names []string) []ids.ObjectID {
	var out []ids.ObjectID
	for _, n := range names {
		out = append(out, f.obj(n))
	}
	return out
}

func (f *fixture) worker(name string) *wk {
	if f.workers[name] == nil {
		f.workers[name] = &wk{name: name, id: sched.WorkerID(len(f.workers) + 1)}
	}
	return f.workers[name]
}

// lender is the scheduling core lending a blocked worker's CPUs.
type lender struct{ f *fixture }

func (l lender) Epoch(sched.WorkerID) uint64 { return 0 }
func (l lender) Block(w sched.WorkerID, _ uint64) {
	l.f.log = append(l.f.log, fmt.Sprintf("block %d", w))
}
func (l lender) Unblock(w sched.WorkerID, _ uint64) bool {
	l.f.log = append(l.f.log, fmt.Sprintf("unblock %d", w))
	return true
}

// objs is the Keeper as the Table reads it.
type objs struct{ f *fixture }

func (o objs) Have(id ids.ObjectID) (task.Object, bool) {
	if o.f.evicted[id] {
		o.f.log = append(o.f.log, "rebuild "+o.f.names[id])
		delete(o.f.evicted, id)
		delete(o.f.readable, id)
	}
	obj, _ := o.f.store.Get(id)
	return obj, o.f.readable[id]
}

func (o objs) Read(id ids.ObjectID) (task.Object, <-chan struct{}, error) {
	obj, ok := o.f.store.Get(id)
	if !ok {
		return obj, nil, fmt.Errorf("object %s vanished", o.f.names[id])
	}
	if ch := o.f.pulling[id]; ch != nil {
		o.f.log = append(o.f.log, "pull "+o.f.names[id])
		o.f.parked <- struct{}{}
		return obj, ch, nil
	}
	return obj, nil, nil
}

func (o objs) PinRead(h objtable.Holder, oids []ids.ObjectID) (int, map[int]error) {
	var failed map[int]error
	for i, id := range oids {
		if o.f.evicted[id] {
			o.Have(id)
			return i, nil
		}
		if o.f.unpinned[id] {
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = errors.New("cannot pin")
		}
	}
	return -1, failed
}

// askers is the node's side of the workers.
type askers struct{ f *fixture }

func (a askers) Dead(w *wk) bool                { return w.dead }
func (a askers) Holder(w *wk) objtable.Holder   { return objtable.WorkerHolder(int(w.id)) }
func (a askers) Locate(w *wk, o []ids.ObjectID) { a.f.log = append(a.f.log, "locate "+w.name) }
func (a askers) HelpFor([]ids.ObjectID) func(func() bool) {
	a.f.parked <- struct{}{}
	return nil
}

// Send decodes the reply as the worker would.
func (a askers) Send(w *wk, typ byte, fn func([]byte) []byte) {
	d := wire.Dec{B: fn(nil)}
	id := d.Uvarint()
	var parts []string
	for range d.Count() {
		if typ == task.MsgWaitReply {
			parts = append(parts, fmt.Sprint(d.Byte() == 1))
			continue
		}
		o := task.DecodeObject(&d)
		if o.Err != nil {
			msg := o.Err.Message
			for oid, name := range a.f.names {
				msg = strings.ReplaceAll(msg, oid.String(), name)
			}
			parts = append(parts, "!"+msg)
		} else {
			parts = append(parts, string(o.Data))
		}
	}
	kind := map[byte]string{task.MsgWaitReply: "wait", task.MsgGetReply: "get"}[typ]
	a.f.sent <- fmt.Sprintf("reply %s %s %d: %s", w.name, kind, id, strings.Join(parts, " "))
}

// do carries out one event under the lock, except those of the driver's
// calls, which take it themselves.
func (f *fixture) do(ev string) {
	w := strings.Fields(ev)
	switch w[0] {
	case "get": // get X...: the driver's Get, on its own goroutine
		oids := f.objs(w[1:])
		go func() {
			objs, err := f.tab.Get(f.ctx, oids)
			var parts []string
			for i, o := range objs {
				parts = append(parts, w[1+i]+"="+string(o.Data))
			}
			f.result <- outcome(strings.Join(parts, " "), err)
		}()
		// It returns, or parks: waiting for its answer or for a pull.
		select {
		case <-f.parked:
		case r := <-f.result:
			f.result <- r
		}
		return
	case "wait": // wait NUM TIMEOUT X...: the driver's Wait
		num, timeout := atoi(f.t, w[1]), parseDuration(f.t, w[2])
		oids := f.objs(w[3:])
		go func() {
			ready, err := f.tab.Wait(f.ctx, oids, num, timeout)
			f.result <- outcome(fmt.Sprint(ready), err)
		}()
		return
	case "got", "waited": // the driver's call returns
		f.log = append(f.log, w[0]+" "+<-f.result)
		return
	case "cancel": // the driver's call's context ends
		f.cancel()
		return
	case "pulled": // pulled X: X's copy from another node is here
		f.mu.Lock()
		close(f.pulling[f.obj(w[1])])
		delete(f.pulling, f.obj(w[1]))
		f.mu.Unlock()
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch w[0] {
	case "have": // have X: X is stored and readable before the requests
		f.store.Put(f.obj(w[1]), task.Object{Data: []byte(w[1])})
		f.readable[f.obj(w[1])] = true
	case "store", "store-err": // store X: X is stored now (a value, or a failure)
		id := f.obj(w[1])
		o := task.Object{Data: []byte(w[1])}
		if w[0] == "store-err" {
			o = task.Object{Err: &task.TaskError{Message: "boom"}}
		}
		f.store.Put(id, o)
		f.readable[id] = true
		f.waits.Stored(id)
		f.step()
	case "remote": // remote X: X is readable, its copy on another node
		id := f.obj(w[1])
		f.store.Put(id, task.Object{Data: []byte(w[1])})
		f.readable[id] = true
		f.pulling[id] = make(chan struct{})
	case "evict": // evict X: X is evicted, as PinRead will find
		f.evicted[f.obj(w[1])] = true
	case "unpinnable": // unpinnable X: pinning X fails
		f.unpinned[f.obj(w[1])] = true
	case "ask": // ask W get|wait NUM X...: worker W's request (number 7)
		m := pool.Request{ID: 7, Wait: w[2] == "wait"}
		rest := w[3:]
		if m.Wait {
			m.Need, rest = atoi(f.t, rest[0]), rest[1:]
		}
		m.Objects = f.objs(rest)
		if !m.Wait {
			m.Need = len(m.Objects)
		}
		wk := f.worker(w[1])
		f.tab.Ask(wk, wk.id, true, m)
	case "dies": // dies W: worker W is gone
		wk := f.worker(w[1])
		wk.dead = true
		f.waits.WorkerGone(wk.id)
		f.step()
	case "shutdown":
		close(f.done)
	case "open": // how many requests are open
		f.log = append(f.log, fmt.Sprintf("open %d", f.waits.Len()))
		if err := f.waits.Check(); err != nil {
			f.t.Error(err)
		}
	default:
		f.t.Fatalf("unknown event %q", ev)
	}
}

func outcome(s string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return s
}

func atoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func parseDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type step struct {
	event string
	want  []string
}

func run(t *testing.T, steps []step) {
	f := newFixture(t)
	defer f.cancel()
	for i, s := range steps {
		f.do(s.event)
		f.mu.Lock()
		got := f.log
		f.log = nil
		f.mu.Unlock()
		for more := true; more; {
			select {
			case r := <-f.sent:
				got = append(got, r)
			default:
				more = false
			}
		}
		if strings.Join(got, "\n") != strings.Join(s.want, "\n") {
			t.Fatalf("step %d %q:\n got  %q\n want %q", i, s.event, got, s.want)
		}
	}
}

type scenario struct {
	name  string
	steps []step
}

func runAll(t *testing.T, cases []scenario) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.steps) })
	}
}

func TestWorkerRequests(t *testing.T) {
	runAll(t, []scenario{
		{"a Get of stored objects is answered at once, without lending", []step{
			{"have a", nil},
			{"ask w1 get a", []string{"locate w1", "reply w1 get 7: a"}},
			{"open", []string{"open 0"}},
		}},
		{"a Get waits for every object, its worker's CPUs lent meanwhile", []step{
			{"have a", nil},
			{"ask w1 get a b", []string{"block 1"}},
			{"store b", []string{"unblock 1", "locate w1", "reply w1 get 7: a b"}},
			{"open", []string{"open 0"}},
		}},
		{"a failed object answers with its error", []step{
			{"ask w1 get a", []string{"block 1"}},
			{"store-err a", []string{"unblock 1", "locate w1", "reply w1 get 7: !boom"}},
		}},
		{"a Wait answers once num objects are ready", []step{
			{"ask w1 wait 1 a b", []string{"block 1"}},
			{"store b", []string{"unblock 1", "reply w1 wait 7: false true"}},
			{"store a", nil},
			{"open", []string{"open 0"}},
		}},
		{"evicted between ready and reply: waits for its rebuild", []step{
			{"ask w1 get a", []string{"block 1"}},
			{"evict a", nil},
			{"store a", []string{"unblock 1", "rebuild a", "block 1"}},
			{"store a", []string{"unblock 1", "locate w1", "reply w1 get 7: a"}},
			{"open", []string{"open 0"}},
		}},
		{"an object that cannot be pinned is answered with why", []step{
			{"have a", nil},
			{"have b", nil},
			{"unpinnable b", nil},
			{"ask w1 get a b", []string{"locate w1", "reply w1 get 7: a !object b: cannot pin"}},
		}},
		{"a dead worker's request ends unanswered", []step{
			{"ask w1 get a", []string{"block 1"}},
			{"dies w1", nil},
			{"store a", nil},
			{"open", []string{"open 0"}},
		}},
	})
}

func TestDriverRequests(t *testing.T) {
	runAll(t, []scenario{
		{"a Get of stored objects returns them", []step{
			{"have a", nil},
			{"get a", nil},
			{"got", []string{"got a=a"}},
		}},
		{"a Get waits for its objects, lending nothing", []step{
			{"get a b", nil},
			{"store a", nil},
			{"store b", nil},
			{"got", []string{"got a=a b=b"}},
			{"open", []string{"open 0"}},
		}},
		{"a Get of a copy on another node reads it once pulled", []step{
			{"remote a", nil},
			{"get a", []string{"pull a"}},
			{"pulled a", nil},
			{"got", []string{"got a=a"}},
		}},
		{"a Get whose context ends gives its request up", []step{
			{"get a", nil},
			{"cancel", nil},
			{"got", []string{"got error: gray: get: context canceled"}},
			{"open", []string{"open 0"}},
		}},
		{"a Get waiting at shutdown returns ErrShutdown", []step{
			{"get a", nil},
			{"shutdown", nil},
			{"got", []string{"got error: " + objects.ErrShutdown.Error()}},
		}},
		{"a Get after shutdown returns ErrShutdown", []step{
			{"shutdown", nil},
			{"get a", nil},
			{"got", []string{"got error: " + objects.ErrShutdown.Error()}},
		}},
		{"a Wait returns once num objects are ready", []step{
			{"wait 1 0s a b", nil},
			{"store b", nil},
			{"waited", []string{"waited [false true]"}},
			{"open", []string{"open 0"}},
		}},
		{"a Wait's timeout answers with what is ready", []step{
			{"have a", nil},
			{"wait 2 1ms a b", nil},
			{"waited", []string{"waited [true false]"}},
			{"open", []string{"open 0"}},
		}},
	})
}

// TestWorkerWaitTimeout: a worker's Wait with a timeout is answered by
// its timer with what is ready then, once.
func TestWorkerWaitTimeout(t *testing.T) {
	f := newFixture(t)
	f.do("have a")
	f.mu.Lock()
	wk := f.worker("w1")
	f.tab.Ask(wk, wk.id, true, pool.Request{ID: 7, Wait: true, Need: 2, Timeout: time.Millisecond, Objects: f.objs([]string{"a", "b"})})
	f.mu.Unlock()
	if got, want := <-f.sent, "reply w1 wait 7: true false"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	f.do("store b")
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.waits.Len(); n != 0 || len(f.sent) != 0 {
		t.Fatalf("%d requests open, %d more replies after the timeout's", n, len(f.sent))
	}
}
