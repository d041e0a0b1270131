package objects

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/task"
)

// Tasks waiting for their arguments (args.go) and what tasks return
// (results.go), played as the Keeper's other tests are: "args t1 a b"
// submits task t1 taking a and b, "ready t1" is the Keeper handing it
// back (Tasks.Ready); "returns x" is f returning its result r.

// doTasks carries out the events about tasks; false: not one of them.
func (f *fixture) doTasks(w []string) bool {
	k := f.k
	switch w[0] {
	case "args": // args T X...: task T takes X... (NeedArgs)
		t, s := f.task(w[1], w[2:])
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("%s waits: %v", w[1], k.NeedArgs(t, s)))
	case "args-lost": // args-lost T: T is about to be sent (ArgsLost)
		t, s := f.task(w[1], nil)
		f.tasks.log = append(f.tasks.log, fmt.Sprintf("%s lost: %v", w[1], k.ArgsLost(t, s)))
	case "put-err": // put-err X: X is a failed task's result
		k.Put(f.obj(w[1]), task.Object{Err: &task.TaskError{Function: "g", Message: "boom"}})
	case "returns": // returns x|err|shared: f's run returned a value, an error or 4 KiB in shared memory
		o := task.Object{Data: []byte("x")}
		switch w[1] {
		case "err":
			o = task.Object{Err: &task.TaskError{Function: "f", Message: "boom"}}
		case "shared":
			wr, err := objstore.CreateFile(f.shared.Dir(), StoreID(r), 4096) // as a worker writes it
			if err == nil {
				err = wr.Seal()
			}
			if err != nil {
				f.t.Fatal(err)
			}
			o = task.Object{Shared: true, Size: 4096}
		}
		if err := k.Results(tt, fspec, fspec, Worker{Name: "worker 1"}, []task.Object{o}); err != nil {
			f.tasks.log = append(f.tasks.log, "failed: "+err.Message)
		}
	case "get-pins": // get-pins X...: a worker's Get is answered with X... (PinRead)
		var oids []ids.ObjectID
		for _, x := range w[1:] {
			oids = append(oids, f.obj(x))
		}
		i, failed := k.PinRead(objtable.WorkerHolder(1), oids)
		switch {
		case i >= 0:
			f.tasks.log = append(f.tasks.log, "reopen for "+w[1+i])
		case len(failed) > 0:
			f.tasks.log = append(f.tasks.log, fmt.Sprintf("pinned, %d failed", len(failed)))
		default:
			f.tasks.log = append(f.tasks.log, "pinned")
		}
	case "task-ends-on-worker": // the worker's task ends: its reads are unpinned
		k.UnpinAll(objtable.WorkerHolder(1), objtable.ReadPin)
	case "worker-dies": // the worker dies
		k.WorkerGone(objtable.WorkerHolder(1))
	case "read": // read X: the driver's Get reads X (Read)
		o, again, err := k.Read(f.obj(w[1]))
		switch {
		case err != nil:
			f.tasks.log = append(f.tasks.log, "read "+w[1]+": "+err.Error())
		case again != nil:
			f.tasks.log = append(f.tasks.log, "read "+w[1]+": again")
		default:
			f.tasks.log = append(f.tasks.log, fmt.Sprintf("read %s: %d bytes%s", w[1], len(o.Data), showValue(o)))
		}
	case "waiting": // which tasks wait for an argument
		var names []string
		k.EachWaiting(func(t tk) { names = append(names, t.name) })
		slices.Sort(names)
		f.tasks.log = append(f.tasks.log, "waiting: "+strings.Join(names, " "))
	default:
		return false
	}
	return true
}

// task returns task name and its spec, made taking args on first use.
func (f *fixture) task(name string, args []string) (tk, *task.Spec) {
	if t, ok := f.named[name]; ok {
		return t, f.specs[name]
	}
	if f.named == nil {
		f.named, f.specs = map[string]*fakeTask{}, map[string]*task.Spec{}
	}
	t := &fakeTask{name: name}
	s := &task.Spec{ID: ids.Child(root, 100+uint64(len(f.named))), Func: name, NumReturns: 1}
	for _, a := range args {
		s.Args = append(s.Args, task.Arg{IsRef: true, Ref: f.obj(a)})
	}
	f.named[name], f.specs[name] = t, s
	return t, s
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		steps   []step
	}{
		{"a task waits for its missing arguments, and is ready once the last is stored", false, []step{
			{"put a", []string{"wake a"}},
			{"args t1 a b c", []string{"t1 waits: true"}},
			{"waiting", []string{"waiting: t1"}},
			{"put b", []string{"wake b"}},
			{"put c", []string{"wake c", "ready t1"}},
			{"waiting", []string{"waiting: "}},
		}},
		{"arguments that exist: no wait", false, []step{
			{"put a", []string{"wake a"}},
			{"args t1 a a", []string{"t1 waits: false"}},
			{"waiting", []string{"waiting: "}},
		}},
		{"one object twice: counted twice, ready once", false, []step{
			{"args t1 a a", []string{"t1 waits: true"}},
			{"put a", []string{"wake a", "ready t1"}},
		}},
		{"waiters for one object wake in the order they came", false, []step{
			{"args t2 a", []string{"t2 waits: true"}},
			{"args t1 a b", []string{"t1 waits: true"}},
			{"args t3 a", []string{"t3 waits: true"}},
			{"put a", []string{"wake a", "ready t2", "ready t3"}},
			{"waiting", []string{"waiting: t1"}},
			{"put b", []string{"wake b", "ready t1"}},
		}},
		{"a failed argument makes the task fail, once all are there", false, []step{
			{"args t1 a b", []string{"t1 waits: true"}},
			{"put-err a", []string{"wake a: boom"}},
			{"put b", []string{"wake b", "ready t1 (failed: boom)"}},
		}},
		{"a failed argument stored before: the task fails at once", false, []step{
			{"put-err a", []string{"wake a: boom"}},
			{"args t1 a", []string{"t1 waits: false"}},
			{"put b", []string{"wake b"}}, // t1 does not wait for b: nothing
		}},
		{"an argument dropped while a task waits lives until the task is sent", false, []step{
			{"args t1 a", []string{"t1 waits: true"}},
			{"drop a", nil},
			{"put-shared a 4096", []string{"wake a", "ready t1"}},
			{"exists a", []string{"a true"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 1"}}, // its argument claim and the pin for the task
		}},
		{"a put lost with its node before the task is sent: the task fails with its loss", true, []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"args t1 a", []string{"t1 waits: false"}},
			{"node-gone 1", []string{"wake a: lost put"}},
			{"args-lost t1", []string{"t1 lost: true"}},
			{"waiting", []string{"waiting: "}},
		}},
		{"a result lost with its node before the task is sent: rebuilt, and the task waits for it", true, []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"remote r 1 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"args t1 r", []string{"t1 waits: false"}},
			{"node-gone 1", nil},
			{"args-lost t1", []string{"resubmit f", "t1 lost: true"}},
			{"waiting", []string{"waiting: t1"}},
			{"put-shared r 4096", []string{"wake r", "ready t1"}},
		}},
		{"nothing lost: the task goes", true, []step{
			{"remote a 1 4096", []string{"wake a"}},
			{"args t1 a", []string{"t1 waits: false"}},
			{"args-lost t1", []string{"t1 lost: false"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.cluster, tc.steps) })
	}
}

func TestResults(t *testing.T) {
	runAll(t, false, []scenario{
		{"a result is stored and wakes the task waiting for it", []step{
			{"args t1 r", []string{"t1 waits: true"}},
			{"returns x", []string{"wake r", "ready t1"}},
		}},
		{"a failed result is stored as its error, and reported", []step{
			{"returns err", []string{"wake r: boom", "failed: boom"}},
			{"have r", []string{"have r: true: boom"}},
		}},
		{"a task run twice keeps its first result", []step{
			{"returns x", []string{"wake r"}},
			{"returns err", nil},
			{"have r", []string{"have r: true"}},
		}},
		{"a rebuild stores the evicted result again", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"evict r", nil},
			{"have r", []string{"resubmit f", "have r: false"}},
			{"returns shared", []string{"wake r"}},
			{"have r", []string{"have r: true"}},
		}},
	})
}

// Reading what a Get was answered with (reads.go): an object evicted
// between readiness and the read is rebuilt, and the read waits for it.
func TestReads(t *testing.T) {
	runAll(t, false, []scenario{
		{"a worker's answer is pinned until its task ends", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"put b", []string{"wake b"}},
			{"get-pins a b", []string{"pinned"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 1"}},
			{"task-ends-on-worker", nil},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"a dead worker's pins end with it", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"get-pins a", []string{"pinned"}},
			{"drop a", nil},
			{"exists a", []string{"a false"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 1"}},
			{"worker-dies", nil},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"evicted before the worker's answer: rebuilt, the request waits again, nothing stays pinned", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"evict r", nil},
			{"get-pins a r", []string{"resubmit f", "reopen for r"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 0"}}, // r's lineage claims a; a's read pin was undone
		}},
		{"an evicted put in the worker's answer: sent as its loss", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"put-shared b 4096", []string{"wake b"}},
			{"evict b", nil},
			{"get-pins a b", []string{"pinned"}},
			{"have b", []string{"have b: true: lost put"}},
		}},
		{"the driver maps a shared object and pins it once", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"read a", []string{"read a: 4096 bytes"}},
			{"read a", []string{"read a: 4096 bytes"}},
			{"recorded a", []string{"recorded 1, kept 0, pins 1"}},
			{"drop a", nil},
			{"recorded a", []string{"recorded 0, kept 0, pins 0"}},
		}},
		{"evicted before the driver's read: rebuilt, read again", []step{
			{"put-shared a 4096", []string{"wake a"}},
			{"lineage", nil},
			{"put-shared r 4096", []string{"wake r"}},
			{"lineage-ends", nil},
			{"evict r", nil},
			{"read r", []string{"resubmit f", "read r: again"}},
			{"returns shared", []string{"wake r"}},
			{"read r", []string{"read r: 4096 bytes"}},
		}},
	})
}

// TestArgFailure: a task whose argument failed fails with one line that
// names the argument's failure, and keeps that failure (stack and all) as
// its cause.
func TestArgFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		arg  *task.TaskError
		want string
	}{
		{"plain", &task.TaskError{Function: "f", Message: "boom"}, "task g failed: an argument failed: task f failed: boom"},
		{"panicked", &task.TaskError{Function: "f", Worker: "worker 2", Message: "panic: x", Stack: "goroutine 1 [running]:"},
			"task g failed: an argument failed: task f failed on worker 2: panic: x"},
		{"nested", &task.TaskError{Function: "f", Message: "an argument failed: task e failed: lost"},
			"task g failed: an argument failed: task f failed: an argument failed: task e failed: lost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w ArgWait
			w.fail(c.arg)
			got := w.Failure("g")
			if got.Error() != c.want {
				t.Errorf("Failure(g) = %q, want %q", got.Error(), c.want)
			}
			if got.Function != "g" || !errors.Is(got, c.arg) {
				t.Errorf("Failure(g) names %q and wraps %v; want g, wrapping the argument's failure", got.Function, got.Cause)
			}
		})
	}
}
