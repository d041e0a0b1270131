package objects

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
)

// The tests play the node: each case is a table of events, written one a
// line ("put a", "drop a", "evict r", "node-gone 1"...; see do), and what
// each makes the Keeper ask of the node (objects.Tasks) or answer, one a
// line. Check runs after every step. No process, no clock, no socket: the
// shared-memory store is a folder, and a cluster's other nodes are names.

var (
	root = ids.Root(1, true)
	// f(a) -> r: a function task whose argument a is a reference.
	tf = ids.Child(root, 1)
	a  = ids.Put(root, 1)
	r  = ids.Return(tf, 0)
	// b, c: two more Puts; m: a return of an actor method (no lineage).
	b = ids.Put(root, 2)
	c = ids.Put(root, 3)
	m = ids.Return(ids.Child(root, 3), 0)

	fspec = &task.Spec{ID: tf, Func: "f", NumReturns: 1, Args: []task.Arg{{IsRef: true, Ref: a}}}
	actor = ids.ActorID(ids.Child(root, 4))

	objNames = map[string]ids.ObjectID{"a": a, "b": b, "c": c, "r": r, "m": m}
)

func name(id ids.ObjectID) string {
	for s, x := range objNames {
		if x == id {
			return s
		}
	}
	return id.String()[:8]
}

func nameHex(h string) string {
	for s, x := range objNames {
		if x.String() == h {
			return s
		}
	}
	return h[:8]
}

// tk is the node's task in the tests: a name, and its wait for its
// arguments.
type tk = *fakeTask

type fakeTask struct {
	name string
	args ArgWait
}

func (t *fakeTask) Args() *ArgWait { return &t.args }
func (t *fakeTask) String() string { return t.name }

// tt is the task the events that name no task are about.
var tt = &fakeTask{name: "t"}

// fakeTasks is the node: it writes down what it is asked.
type fakeTasks struct {
	log    []string
	waited map[ids.ObjectID]bool
}

func (f *fakeTasks) Waited(id ids.ObjectID) bool { return f.waited[id] }

func (f *fakeTasks) Stored(id ids.ObjectID, o task.Object) {
	f.log = append(f.log, "wake "+name(id)+showValue(o))
}

func (f *fakeTasks) Ready(t tk) {
	msg := "ready " + t.name
	if err := t.args.Failed(); err != nil {
		msg += " (failed" + showValue(task.Object{Err: err}) + ")"
	}
	f.log = append(f.log, msg)
}

func (f *fakeTasks) Apply(e recovery.Effect[tk]) {
	switch e.Kind {
	case recovery.Resubmit:
		f.log = append(f.log, "resubmit "+e.Spec.Func)
	case recovery.Rerun:
		f.log = append(f.log, fmt.Sprintf("rerun %s (refetch %v)", e.Task, e.Refetch))
	case recovery.GiveUp:
		f.log = append(f.log, "give up "+name(e.ID))
	default:
		f.log = append(f.log, fmt.Sprintf("effect %d", e.Kind))
	}
}

// fakeNodes is the cluster's side of moving objects.
type fakeNodes struct{ log *[]string }

func (f fakeNodes) ObjectAddr(k NodeID) string { return "node" + strconv.Itoa(int(k)) }
func (f fakeNodes) ReleaseObjects(k NodeID, hexIDs []string) {
	for _, h := range hexIDs {
		*f.log = append(*f.log, fmt.Sprintf("release %s on node%d", nameHex(h), k))
	}
}

// showValue writes what an object is: nothing for a value, else its
// error's reason.
func showValue(o task.Object) string {
	if o.Err == nil {
		return ""
	}
	for _, x := range []struct {
		err  error
		name string
	}{{task.ErrLostPut, "lost put"}, {task.ErrLostActorMethod, "lost actor result"}, {task.ErrLostOwnerDied, "owner died"},
		{task.ErrFreed, "freed"}, {task.ErrLostRetriesExhausted, "retries exhausted"}} {
		if errors.Is(o.Err, x.err) {
			return ": " + x.name
		}
	}
	return ": " + o.Err.Message
}

type fixture struct {
	t      *testing.T
	named  map[string]*fakeTask  // tasks of the args events, by name
	specs  map[string]*task.Spec // and their specs
	k      *Keeper[tk]
	tasks  *fakeTasks
	shared *objstore.Store
	sender *fakeSender // the worker of the msg- events (messages_test.go)
}

func newFixture(t *testing.T, cluster bool) *fixture {
	st, err := objstore.Open(objstore.Options{Dir: t.TempDir(), Capacity: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, tasks: &fakeTasks{waited: map[ids.ObjectID]bool{}}, shared: st}
	f.k = New(Config[tk]{Store: NewMemStore(), Shared: st, Table: objtable.New(),
		Rec: recovery.New[tk](recovery.Limits{Cluster: cluster}), Tasks: f.tasks})
	if cluster {
		// The transfer server is not started: its address is a name.
		f.k.remote = &remote{ro: fakeNodes{&f.tasks.log}, addr: "driver", pulls: map[ids.ObjectID]chan struct{}{}}
		f.k.rec.Step(recovery.NodeAdded{Node: 1, Name: "n1"})
		f.k.rec.Step(recovery.NodeAdded{Node: 2, Name: "n2"})
	}
	return f
}

func (f *fixture) obj(s string) ids.ObjectID {
	id, ok := objNames[s]
	if !ok {
		f.t.Fatalf("no object %q", s)
	}
	return id
}

// putShared writes size bytes as object id into the store, as a worker
// does, and stores it (with its lineage when it is f's result).
func (f *fixture) putShared(id ids.ObjectID, size int) {
	w, err := f.shared.Create(StoreID(id), int64(size))
	if err != nil {
		f.t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		f.t.Fatal(err)
	}
	o := task.Object{Shared: true, Size: int64(size)}
	var lineage *task.Spec
	if id == r {
		lineage = fspec
	}
	f.k.Put(id, f.k.Result(id, lineage, o, false))
}

// do carries out one event; its words are the event's name and objects.
func (f *fixture) do(ev string) {
	w := strings.Fields(ev)
	k := f.k
	arg := func(i int) ids.ObjectID { return f.obj(w[i]) }
	num := func(i int) int {
		n, err := strconv.Atoi(w[i])
		if err != nil {
			f.t.Fatalf("%q: %v", ev, err)
		}
		return n
	}
	switch w[0] {
	case "put": // put X: an inline value
		k.Put(arg(1), task.Object{Data: []byte("x")})
	case "put-shared": // put-shared X SIZE
		f.putShared(arg(1), num(2))
	case "remote": // remote X NODE SIZE: only NODE holds X
		id := arg(1)
		var lineage *task.Spec
		if id == r {
			lineage = fspec
		}
		k.Put(id, k.Result(id, lineage, task.Object{Shared: true, Size: int64(num(3))}, false))
		k.Recover(recovery.Held{ID: id, Node: NodeID(num(2))})
	case "drop":
		k.Drop(objtable.Holder{}, arg(1))
	case "wait":
		f.tasks.waited[arg(1)] = true
	case "need": // need X: f's argument, claimed and pinned for it
		o, ok := k.Need(tf, arg(1))
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("need %s: %v%s", w[1], ok, showValue(o)))
	case "sent":
		k.Sent(arg(1))
	case "send", "unsent": // send NODE X...: f, taking X..., goes to a worker on NODE; unsent X...: f ends unsent
		first := 2
		if w[0] == "unsent" {
			first = 1
		}
		spec := &task.Spec{ID: tf, Func: "f", NumReturns: 1}
		for i := first; i < len(w); i++ {
			spec.Args = append(spec.Args, task.Arg{IsRef: true, Ref: arg(i)})
		}
		if w[0] == "unsent" {
			k.Unsent(spec)
			return
		}
		var s []string
		for _, l := range k.Send(NodeID(num(1)), spec) {
			s = append(s, "locate "+name(l.ID)+" from "+l.Addr)
		}
		for i, a := range spec.Args {
			if a.Shared {
				s = append(s, fmt.Sprintf("%s shared %d", w[first+i], a.Size))
			} else {
				s = append(s, fmt.Sprintf("%s inline %q", w[first+i], a.Data))
			}
		}
		f.tasks.log = append(f.tasks.log, "send: "+strings.Join(s, ", "))
	case "task-ended":
		k.UnpinTask(tf)
	case "contain": // contain PARENT CHILD
		k.Contain(arg(1), []ids.ObjectID{arg(2)})
	case "evict":
		if err := f.shared.Release(StoreID(arg(1))); err != nil {
			f.t.Fatal(err)
		}
	case "have":
		o, ok := k.Have(arg(1))
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("have %s: %v%s", w[1], ok, showValue(o)))
	case "rebuild-fails": // f, run to rebuild r, ended with an error
		k.rec.Step(recovery.Ended[tk]{Task: tt, ID: tf})
		k.FailRebuild(fspec, &task.TaskError{Function: "f", Message: "boom"})
	case "free-now":
		k.FreeNow(arg(1))
	case "keep": // keep X: the actor keeps X (a Keep argument)
		s := &task.Spec{Args: []task.Arg{{IsRef: true, Ref: arg(1), Keep: true}}}
		k.HoldKept(actor, false, s)
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("kept %s: %v", w[1], s.Args[0].Keep))
	case "actor-dies":
		k.ReleaseKept(actor)
	case "lineage":
		k.ClaimLineage(fspec)
	case "lineage-ends":
		k.ReleaseLineage(fspec)
	case "held": // held X NODE
		k.Recover(recovery.Held{ID: arg(1), Node: NodeID(num(2))})
	case "node-gone":
		k.Recover(recovery.NodeGone{Node: NodeID(num(1)), Why: "killed"})
	case "locate": // locate NODE X...
		var oids []ids.ObjectID
		for i := 2; i < len(w); i++ {
			oids = append(oids, arg(i))
		}
		var s []string
		for _, l := range k.Locate(NodeID(num(1)), oids) {
			s = append(s, name(l.ID)+" from "+l.Addr)
		}
		f.tasks.log = append(f.tasks.log, "locate: "+strings.Join(s, ", "))
	case "near": // near X...: a task taking the objects
		var args []task.Arg
		for i := 1; i < len(w); i++ {
			args = append(args, task.Arg{IsRef: true, Ref: arg(i)})
		}
		n, ok := k.Near(args)
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("near: %d %v", n, ok))
	case "pull-failed": // pull-failed X: task t's worker could not pull X
		err := &task.TaskError{Function: "f", Message: "an argument failed", Cause: transfer.PullError(arg(1), "node1", errors.New("refused"))}
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("retry: %v", k.RetryPull(tt, "worker 1", []task.Object{{Err: err}})))
	case "exists": // exists X...: which of them the store holds
		var s []string
		for i := 1; i < len(w); i++ {
			_, ok := k.store.Get(arg(i))
			s = append(s, fmt.Sprintf("%s %v", w[i], ok))
		}
		f.tasks.log = append(f.tasks.log, strings.Join(s, ", "))
	case "recorded":
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("recorded %d, kept %d, pins %d", k.Recorded(), k.KeptBy(actor), f.shared.Pins(StoreID(arg(1)))))
	default:
		if !f.doTasks(w) && !f.doMessages(w) {
			f.t.Fatalf("unknown event %q", ev)
		}
	}
}

type step struct {
	ev   string
	want []string
}

func run(t *testing.T, cluster bool, steps []step) {
	t.Helper()
	f := newFixture(t, cluster)
	for i, s := range steps {
		f.tasks.log = nil
		f.do(s.ev)
		if !slices.Equal(f.tasks.log, s.want) {
			t.Fatalf("step %d (%s):\n got  %q\n want %q", i, s.ev, f.tasks.log, s.want)
		}
		if err := f.k.Check(func(objtable.Holder) bool { return true }); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.ev, err)
		}
	}
}

// scenario is one case of an event table: a name and its steps.
type scenario struct {
	name  string
	steps []step
}

// runAll runs each scenario as a subtest on a fresh fixture.
func runAll(t *testing.T, cluster bool, cases []scenario) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { run(t, cluster, tc.steps) })
	}
}

func TestLifetimes(t *testing.T) {
	runAll(t, false, []scenario{
		{"dropped object is freed", []step{
			{"put a", []string{"wake a"}},
			{"drop a", nil},
			{"exists a", []string{"a false"}},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"dropped before it exists: freed once stored, after waking", []step{
			{"drop a", nil},
			{"put a", []string{"wake a"}},
			{"exists a", []string{"a false"}},
		}},
		{"waited for: not freed", []step{
			{"wait a", nil},
			{"put a", []string{"wake a"}},
			{"drop a", nil},
			{"exists a", []string{"a true"}},
		}},
		{"a task's argument lives until the task is sent", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"need a", []string{"need a: true"}},
			{"drop a", nil},
			{"exists a", []string{"a true"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 1"}},
			{"sent a", nil},
			{"exists a", []string{"a false"}},
			{"task-ended", nil},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"a sent task carries its arguments' values and lets them go", []step{
			{"put a", []string{"wake a"}},
			{"put-shared b 4096", []string{"wake b"}},
			{"need a", []string{"need a: true"}},
			{"need b", []string{"need b: true"}},
			{"drop a", nil},
			{"drop b", nil},
			{"send 0 a b", []string{`send: a inline "x", b shared 4096`}},
			{"exists a b", []string{"a false, b false"}},
			{"recorded b", []string{"recorded 1, kept 0, pins 1"}}, // the task's pin, until it ends
			{"task-ended", nil},
			{"recorded b", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"a task that ends unsent lets its arguments go", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"need a", []string{"need a: true"}},
			{"drop a", nil},
			{"unsent a", nil},
			{"exists a", []string{"a false"}},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"a child lives as long as its parent", []step{
			{"put a", []string{"wake a"}},
			{"put b", []string{"wake b"}},
			{"contain b a", nil},
			{"drop a", nil},
			{"exists a", []string{"a true"}},
			{"drop b", nil},
			{"exists a b", []string{"a false, b false"}},
		}},
		{"freed with gray.Free: an error says so", []step{
			{"put a", []string{"wake a"}},
			{"free-now a", nil},
			{"have a", []string{"have a: true: freed"}},
		}},
		{"an actor keeps a shared argument until it dies", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"keep a", []string{"kept a: true"}},
			{"drop a", nil},
			{"recorded a", []string{"recorded 1, kept 1, pins 1"}},
			{"actor-dies", nil},
			{"exists a", []string{"a false"}},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"an inline argument is not kept: the worker copies it", []step{
			{"put a", []string{"wake a"}},
			{"keep a", []string{"kept a: false"}},
		}},
	})
}

func TestRebuilds(t *testing.T) {
	runAll(t, false, []scenario{
		{"an evicted result with lineage is resubmitted, its argument kept", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"drop a", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"exists a", []string{"a true"}}, // r's lineage keeps it
			{"evict r", nil},
			{"have r", []string{"resubmit f", "have r: false"}},
			{"exists r", []string{"r false"}},
		}},
		{"an evicted put is lost", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"evict a", nil},
			{"have a", []string{"have a: true: lost put"}},
		}},
		{"a rebuild that keeps failing gives the object up", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"evict r", nil},
			{"have r", []string{"resubmit f", "have r: false"}},
			{"rebuild-fails", []string{"wake r: boom"}},
			{"have r", []string{"resubmit f", "have r: false"}},
			{"rebuild-fails", []string{"wake r: boom"}},
			{"have r", []string{"resubmit f", "have r: false"}},
			{"rebuild-fails", []string{"give up r", "wake r: retries exhausted"}},
			{"have r", []string{"have r: true: retries exhausted"}},
		}},
		{"a freed result releases its lineage's argument", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"drop a", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"drop r", nil},
			{"exists a r", []string{"a false, r false"}},
		}},
	})
}

func TestCluster(t *testing.T) {
	runAll(t, true, []scenario{
		{"workers pull from the holder; the driver's store serves other nodes", []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"put-shared b 4096", []string{"wake b"}},
			{"locate 0 a b", []string{"locate: a from node1"}},
			{"locate 2 a b", []string{"locate: a from node1, b from driver"}},
			{"locate 1 a b", []string{"locate: b from driver"}},
		}},
		{"copies sent to other nodes are released with the object", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"locate 2 a", []string{"locate: a from driver"}},
			{"drop a", []string{"release a on node2"}},
		}},
		{"a remote argument is released only once its task ended", []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"need a", []string{"need a: true"}},
			{"drop a", nil},
			{"sent a", nil},
			{"exists a", []string{"a false"}},
			{"task-ended", []string{"release a on node1"}},
		}},
		{"a task sent to another node is told where to pull its argument", []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"need a", []string{"need a: true"}},
			{"send 2 a", []string{"send: locate a from node1, a shared 4096"}},
			{"task-ended", nil},
		}},
		{"a put only a dead node held is lost", []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"node-gone 1", []string{"wake a: lost put"}},
			{"have a", []string{"have a: true: lost put"}},
		}},
		{"a result only a dead node held is rebuilt when asked for", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"remote r 1 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"node-gone 1", nil},
			{"have r", []string{"resubmit f", "have r: false"}},
		}},
		{"a failed pull drops the holder and runs the task again", []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"held a 2", nil},
			{"pull-failed a", []string{"rerun t (refetch true)", "retry: true"}},
			{"locate 0 a", []string{"locate: a from node2"}},
		}},
		{"tasks go where most of their argument bytes are", []step{
			{"remote a 1 1048576", []string{"wake a"}},
			{"remote b 2 524288", []string{"wake b"}},
			{"put-shared c 65536", []string{"wake c"}},
			{"near a b c", []string{"near: 1 true"}},
			{"near b c", []string{"near: 0 false"}},
		}},
	})
}
