package direct

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
)

// The tests step a Table through tables of events and compare the effects
// each step leaves, one a line (see show), as runtime/actorq's do: when a
// caller learns an actor's address and which, what a lease's grant,
// return and endings tell whom, and which promises break, without a
// process. Workers are named by one letter; a name in caps is a worker
// of the other machine.

// wk is a worker as the tests play it.
type wk struct {
	name string
	id   sched.WorkerID
	dead bool
}

// grant is the node's task for a lease in the tests.
type grant struct{ name string }

// world answers the table's questions about workers and objects.
type world struct {
	workers map[string]*wk
	grants  map[string]*grant
	stored  map[ids.ObjectID]bool
	awaited map[ids.ObjectID]bool
	claims  map[ids.ObjectID]bool // a Claim was carried out for it
}

func (w *world) Dead(x *wk) bool               { return x == nil || x.dead }
func (w *world) ID(x *wk) sched.WorkerID       { return x.id }
func (w *world) SameMachine(a, b *wk) bool     { return upper(a.name) == upper(b.name) }
func (w *world) Promised(id ids.ObjectID) bool { return w.awaited[id] }
func (w *world) Stored(id ids.ObjectID) bool   { return w.stored[id] }
func (w *world) Contains(id ids.ObjectID) bool { return w.claims[id] }
func upper(name string) bool                   { return name[0] >= 'A' && name[0] <= 'Z' }
func (w *world) grant(name string) *grant {
	return getOr(w.grants, name, func() *grant { return &grant{name} })
}
func (w *world) wk(name string) *wk {
	return getOr(w.workers, name, func() *wk { return &wk{name: name, id: sched.WorkerID(len(w.workers) + 1)} })
}
func getOr[V any](m map[string]V, k string, mk func() V) V {
	if v, ok := m[k]; ok {
		return v
	}
	v := mk()
	m[k] = v
	return v
}

// obj is object name's ID.
func obj(name string) ids.ObjectID {
	var id ids.ObjectID
	copy(id[:], name)
	return id
}

var counter = ids.Child(ids.Root(1, true), 1)

// Test-only events: they name workers, leases and objects, or change the
// world's answers.
type (
	// ask: caller asks (request Req) for the address of the actor
	// hosted by On (On "": unknown or not direct; Up, Built: its worker is
	// connected, it is constructed).
	ask struct {
		Caller string
		Req    uint64
		On     string
		Up     bool
		Built  bool
	}
	// changed: the actor on On changed (Direct false: dead or draining).
	changed struct {
		On                string
		Direct, Up, Built bool
	}
	// listening: worker W listens at Addr (Hosts: it hosts the actor,
	// constructed when Built).
	listening struct {
		W, Addr      string
		Hosts, Built bool
	}
	// granted: Owner's request Req got lease L on worker W (Down: W is
	// not connected).
	granted struct {
		Owner string
		Req   uint64
		L, W  string
		Down  bool
	}
	refused struct {
		Owner string
		Req   uint64
	}
	returned struct{ Owner, W string }
	orphaned struct{ L string }
	gone     struct{ W string }
	promise  struct {
		W, Obj string
		On     bool
	}
	// die: W's process ended (not yet stepped: Gone).
	die struct{ W string }
	// put: object Obj is stored; free: it is deleted (its claims end).
	put  struct{ Obj string }
	free struct{ Obj string }
	// published: a caller put Obj, a direct result holding references.
	published struct{ Obj string }
	// contain: Obj's value holds references (two children).
	contain struct{ Obj string }
	// callers: the actor's callers given its address number N (Callers).
	callers struct{ N int }
	// asking: the actor's callers waiting for its address number N
	// (Asking).
	asking struct{ N int }
)

func (ask) event()       {}
func (changed) event()   {}
func (listening) event() {}
func (granted) event()   {}
func (refused) event()   {}
func (returned) event()  {}
func (orphaned) event()  {}
func (gone) event()      {}
func (promise) event()   {}
func (die) event()       {}
func (put) event()       {}
func (free) event()      {}
func (published) event() {}
func (contain) event()   {}
func (callers) event()   {}
func (asking) event()    {}

// actor is the actor hosted by on, as the node would describe it.
func (w *world) actor(on string, direct, up, built bool) Actor[*wk] {
	if on == "" {
		return Actor[*wk]{ID: counter}
	}
	return Actor[*wk]{ID: counter, Direct: direct, Worker: w.wk(on), Up: up, Constructed: built}
}

// real turns a test event into the table's.
func (w *world) real(ev Event) Event {
	switch e := ev.(type) {
	case ask:
		return Ask[*wk]{Caller: w.wk(e.Caller), Req: e.Req, Actor: w.actor(e.On, e.On != "", e.Up, e.Built)}
	case changed:
		return Changed[*wk]{Actor: w.actor(e.On, e.Direct, e.Up, e.Built)}
	case listening:
		return Listening[*wk]{Worker: w.wk(e.W), Addr: e.Addr, Hosts: e.Hosts, Actor: w.actor(e.W, true, true, e.Built)}
	case granted:
		return Granted[*wk, *grant]{Owner: w.wk(e.Owner), Req: e.Req, Lease: w.grant(e.L), ID: w.wk(e.W).id, Worker: w.wk(e.W), Up: !e.Down}
	case refused:
		return Refused[*wk]{Owner: w.wk(e.Owner), Req: e.Req}
	case returned:
		return Returned[*wk]{Owner: w.wk(e.Owner), ID: w.wk(e.W).id}
	case orphaned:
		return Orphaned[*grant]{Lease: w.grant(e.L)}
	case gone:
		return Gone[*wk]{Worker: w.wk(e.W)}
	case promise:
		return Promise[*wk]{Worker: w.wk(e.W), Object: obj(e.Obj), On: e.On}
	case published:
		return Published{Object: obj(e.Obj)}
	case contain:
		return Contain{Parent: obj(e.Obj), Children: []ids.ObjectID{obj(e.Obj + ".1"), obj(e.Obj + ".2")}}
	case stopping:
		return Stopping[*wk]{Actor: w.actor(e.On, false, true, true), Released: e.Released}
	case dialed:
		return Dialed[*wk]{Caller: w.wk(e.Caller), Actor: counter}
	}
	return ev
}

// show writes an effect on one line.
func (w *world) show(e Effect[*wk, *grant]) string {
	switch e.Kind {
	case ReplyAddr:
		if e.Addr == "" {
			return fmt.Sprintf("addr %s#%d: through the driver", e.To.name, e.Req)
		}
		return fmt.Sprintf("addr %s#%d: %s", e.To.name, e.Req, e.Addr)
	case Listen:
		return "listen " + e.To.name
	case ReplyLease:
		if e.ID == 0 {
			return fmt.Sprintf("lease %s#%d: refused", e.To.name, e.Req)
		}
		for _, x := range w.workers {
			if x.id == e.ID {
				return fmt.Sprintf("lease %s#%d: %s at %s", e.To.name, e.Req, x.name, e.Addr)
			}
		}
	case EndLease:
		return "end " + e.Lease.name
	case Break:
		return fmt.Sprintf("break %s of %s", name(e.Object), e.To.name)
	case Claim:
		w.claims[e.Object] = true
		s := "claim"
		for _, c := range e.Children {
			s += " " + name(c)
		}
		return s + " for " + name(e.Object)
	case Drain:
		return "drain " + e.To.name
	case DrainLater:
		return "drain later " + e.To.name
	}
	return fmt.Sprintf("effect %d", e.Kind)
}

func name(id ids.ObjectID) string { return string(bytes.TrimRight(id[:], "\x00")) }

// tcase is one case of a table: its steps in order.
type tcase struct {
	name  string
	steps []step
}

// runAll runs each case in a subtest.
func runAll(t *testing.T, cases []tcase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, c.steps) })
	}
}

type step struct {
	ev   Event
	want []string
}

func run(t *testing.T, steps []step) (*world, *Table[*wk, *grant]) {
	t.Helper()
	w := &world{workers: map[string]*wk{}, grants: map[string]*grant{}, stored: map[ids.ObjectID]bool{}, awaited: map[ids.ObjectID]bool{}, claims: map[ids.ObjectID]bool{}}
	tab := New[*wk, *grant](w, w)
	for i, s := range steps {
		switch e := s.ev.(type) {
		case die:
			w.wk(e.W).dead = true
		case put:
			w.stored[obj(e.Obj)] = true
		case free:
			delete(w.stored, obj(e.Obj))
			delete(w.claims, obj(e.Obj))
		case callers:
			if n := tab.Callers(counter); n != e.N {
				t.Fatalf("step %d: %d direct callers, want %d", i, n, e.N)
			}
		case asking:
			if n := tab.Asking(counter); n != e.N {
				t.Fatalf("step %d: %d callers asking, want %d", i, n, e.N)
			}
		default:
			tab.Step(w.real(s.ev))
		}
		var got []string
		for _, e := range tab.Effects() {
			got = append(got, w.show(e))
		}
		if !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%T %+v): effects\n  %q\nwant\n  %q", i, s.ev, s.ev, got, s.want)
		}
	}
	return w, tab
}

func TestDirectAddress(t *testing.T) {
	runAll(t, []tcase{
		{"answered once constructed and listening", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock", Hosts: true}, nil},
			{asking{1}, nil},
			{changed{On: "b", Direct: true, Up: true, Built: true}, []string{"addr a#1: /b.sock"}},
			{asking{0}, nil},
			// Later callers are answered at once, and b is not asked again.
			{ask{Caller: "c", Req: 2, On: "b", Up: true, Built: true}, []string{"addr c#2: /b.sock"}},
			{callers{2}, nil},
		}},
		{"constructed before it says where", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{ask{Caller: "c", Req: 4, On: "b", Up: true, Built: true}, nil},
			{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr a#1: /b.sock", "addr c#4: /b.sock"}},
		}},
		{"its worker not connected yet", []step{
			{ask{Caller: "a", Req: 1, On: "b"}, nil},
			{changed{On: "b", Direct: true, Up: true}, []string{"listen b"}},
			{changed{On: "b", Direct: true, Up: true, Built: true}, nil},
			{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr a#1: /b.sock"}},
		}},
		{"not to be called directly (unknown, restartable, checkpointing)", []step{
			{ask{Caller: "a", Req: 1}, []string{"addr a#1: through the driver"}},
		}},
		{"dies while callers wait", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true}, []string{"listen b"}},
			{changed{On: "b"}, []string{"addr a#1: through the driver"}},
			{changed{On: "b"}, nil},
			{listening{W: "b", Addr: "/b.sock"}, nil},
		}},
		{"a Unix socket reaches its own machine only", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{ask{Caller: "A", Req: 2, On: "b", Up: true, Built: true}, nil},
			{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr a#1: /b.sock", "addr A#2: through the driver"}},
			{callers{1}, nil},
		}},
		{"TCP reaches every machine", []step{
			{ask{Caller: "A", Req: 2, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{listening{W: "b", Addr: "tcp:10.0.0.2:7000", Hosts: true, Built: true}, []string{"addr A#2: tcp:10.0.0.2:7000"}},
		}},
		{"both: each caller gets the one that reaches it", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{ask{Caller: "A", Req: 2, On: "b", Up: true, Built: true}, nil},
			{listening{W: "b", Addr: "/b.sock tcp:10.0.0.1:7000", Hosts: true, Built: true}, []string{"addr a#1: /b.sock", "addr A#2: tcp:10.0.0.1:7000"}},
			{callers{2}, nil},
		}},
		{"could not listen", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{listening{W: "b", Hosts: true, Built: true}, []string{"addr a#1: through the driver"}},
		}},
		{"a dead caller is not answered", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true}, []string{"listen b"}},
			{ask{Caller: "c", Req: 1, On: "b", Up: true}, nil},
			{die{W: "a"}, nil},
			{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr c#1: /b.sock"}},
		}},
	})
}

func TestLease(t *testing.T) {
	runAll(t, []tcase{
		{"granted, answered, returned", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock"}, []string{"lease a#7: b at /b.sock"}},
			{listening{W: "b", Addr: "/b.sock"}, nil}, // said twice: answered once
			{returned{Owner: "c", W: "b"}, nil},       // not c's to return
			{returned{Owner: "a", W: "b"}, []string{"end L1"}},
			{returned{Owner: "a", W: "b"}, nil},
		}},
		{"refused", []step{
			{refused{Owner: "a", Req: 8}, []string{"lease a#8: refused"}},
		}},
		{"the leased worker could not listen", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{listening{W: "b"}, []string{"lease a#7: refused", "end L1"}},
		}},
		{"a Unix socket on another machine than the owner's", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "B"}, []string{"listen B"}},
			{listening{W: "B", Addr: "/B.sock"}, []string{"lease a#7: refused", "end L1"}},
		}},
		{"TCP on another machine", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "B"}, []string{"listen B"}},
			{listening{W: "B", Addr: "tcp:10.0.0.2:7000"}, []string{"lease a#7: B at tcp:10.0.0.2:7000"}},
		}},
		{"both on the owner's machine: the Unix socket", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock tcp:10.0.0.1:7000"}, []string{"lease a#7: b at /b.sock"}},
		}},
		{"granted a worker that is gone", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b", Down: true}, []string{"lease a#7: refused", "end L1"}},
		}},
		{"the leased worker dies before it says where", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{orphaned{L: "L1"}, []string{"lease a#7: refused"}}, // the core took it back
			{listening{W: "b", Addr: "/b.sock"}, nil},
		}},
		{"the leased worker dies after", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock"}, []string{"lease a#7: b at /b.sock"}},
			{orphaned{L: "L1"}, nil}, // the owner sees the connection end
			{returned{Owner: "a", W: "b"}, nil},
		}},
		{"the owner dies holding two, one not answered", []step{
			{granted{Owner: "a", Req: 7, L: "L1", W: "b"}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock"}, []string{"lease a#7: b at /b.sock"}},
			{granted{Owner: "a", Req: 8, L: "L2", W: "c"}, []string{"listen c"}},
			{granted{Owner: "d", Req: 1, L: "L3", W: "e"}, []string{"listen e"}},
			{die{W: "a"}, nil},
			{gone{W: "a"}, []string{"end L1", "end L2"}}, // no reply to the dead
			{listening{W: "c", Addr: "/c.sock"}, nil},
			{listening{W: "e", Addr: "/e.sock"}, []string{"lease d#1: e at /e.sock"}},
		}},
	})
}

func TestPromises(t *testing.T) {
	runAll(t, []tcase{
		{"broken when the owner dies", []step{
			{promise{W: "a", Obj: "x", On: true}, nil},
			{promise{W: "a", Obj: "y", On: true}, nil},
			{promise{W: "a", Obj: "z", On: true}, nil},
			{promise{W: "a", Obj: "y"}, nil}, // withdrawn: the call went through the driver
			{promise{W: "b", Obj: "w", On: true}, nil},
			{die{W: "a"}, nil},
			{gone{W: "a"}, []string{"break x of a", "break z of a"}},
			{gone{W: "a"}, nil},
		}},
		{"a dead worker's promise is not kept", []step{
			{die{W: "a"}, nil},
			{promise{W: "a", Obj: "x", On: true}, nil},
			{gone{W: "a"}, nil},
		}},
	})
}

// TestPromisesSwept checks that a worker's promises cost nothing per call:
// once their count reaches the sweep mark, those put since go, and those
// older than the last sweep that nobody awaits.
func TestPromisesSwept(t *testing.T) {
	w, tab := run(t, nil)
	a := w.wk("a")
	name := func(i int) ids.ObjectID { return obj(fmt.Sprintf("o%d", i)) }
	promise := func(i int) { tab.Step(Promise[*wk]{Worker: a, Object: name(i), On: true}) }
	for i := range minSweep - 1 {
		promise(i)
	}
	for i := range 10 {
		w.stored[name(i)] = true // put since
	}
	w.awaited[name(20)] = true
	promise(minSweep - 1) // the first sweep: the 10 put go; the rest are new
	if n := len(tab.promised[a].ids); n != minSweep-10 {
		t.Fatalf("%d promises after the first sweep, want %d", n, minSweep-10)
	}
	// The next sweep comes when the count doubles.
	newer := 2*(minSweep-10) - (minSweep - 10)
	for i := range newer {
		promise(minSweep + i)
	}
	// Of those before the first sweep only the awaited one stays; the
	// newer stay too (they may be unclaimed yet).
	if n := len(tab.promised[a].ids); n != 1+newer {
		t.Fatalf("%d promises after the second sweep, want %d", n, 1+newer)
	}
	a.dead = true
	tab.Step(Gone[*wk]{Worker: a})
	if n := len(tab.Effects()); n != 1+newer {
		t.Fatalf("%d promises broken, want %d", n, 1+newer)
	}
}

// TestLateContain checks that the children of a direct call's result are
// not claimed when the callee's word of them (MsgContain, on its own
// connection) reaches the driver after the caller's put and drop of the
// result: they would stay claimed by an object gone for good.
func TestLateContain(t *testing.T) {
	runAll(t, []tcase{
		{"the contain first, as usual", []step{
			{contain{Obj: "r"}, []string{"claim r.1 r.2 for r"}},
			{put{Obj: "r"}, nil},
			{published{Obj: "r"}, nil},
			{free{Obj: "r"}, nil},
		}},
		{"the put first, the contain while it lives", []step{
			{put{Obj: "r"}, nil},
			{published{Obj: "r"}, nil},
			{contain{Obj: "r"}, []string{"claim r.1 r.2 for r"}},
		}},
		{"put and freed before the contain", []step{
			{put{Obj: "r"}, nil},
			{published{Obj: "r"}, nil},
			{free{Obj: "r"}, nil},
			{contain{Obj: "r"}, nil}, // nothing holds the children now
			// The ID is not awaited any more: a contain for it (a task
			// run again under the same ID) claims as usual.
			{put{Obj: "r"}, nil},
			{contain{Obj: "r"}, []string{"claim r.1 r.2 for r"}},
		}},
		{"a task's result (never published) after its free", []step{
			{contain{Obj: "r"}, []string{"claim r.1 r.2 for r"}},
		}},
	})
}

// TestLateContainSwept checks that awaited contains cost nothing for
// long: a published result for which no contain ever comes (a return
// without references) goes at a sweep once it is freed.
func TestLateContainSwept(t *testing.T) {
	w, tab := run(t, nil)
	for i := range minSweep - 1 {
		w.stored[obj(fmt.Sprint(i))] = true
		tab.Step(Published{Object: obj(fmt.Sprint(i))})
	}
	for i := range minSweep - 1 {
		if i%2 == 0 {
			delete(w.stored, obj(fmt.Sprint(i))) // freed, no contain came
		}
	}
	w.stored[obj("last")] = true
	tab.Step(Published{Object: obj("last")}) // first sweep: all are new
	for i := 0; ; i++ {                      // until the second sweep
		before := len(tab.awaited.ids)
		w.stored[obj(fmt.Sprint("n", i))] = true
		tab.Step(Published{Object: obj(fmt.Sprint("n", i))})
		if len(tab.awaited.ids) <= before {
			break
		}
		if i > 4*minSweep {
			t.Fatal("no second sweep")
		}
	}
	if _, ok := tab.awaited.ids[obj("0")]; ok {
		t.Fatal("a freed result is still awaited after two sweeps")
	}
	if _, ok := tab.awaited.ids[obj("1")]; !ok {
		t.Fatal("a stored result without its contain went at a sweep")
	}
}
