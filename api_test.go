package gray_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

var (
	generateData = gray.Func1("test.generateData", func(ctx context.Context, seed int) ([]float64, error) {
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		x := make([]float64, 1000)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return x, nil
	})
	aggregateData = gray.Func2("test.aggregateData", func(ctx context.Context, x, y []float64) ([]float64, error) {
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] + y[i]
		}
		return out, nil
	})
	subExperiment = gray.Func2("test.subExperiment", func(ctx context.Context, i, j int) (int, error) { return i + j, nil })
	runExperiment = gray.Func1("test.runExperiment", func(ctx context.Context, i int) (int, error) {
		var subs []gray.Ref[int]
		for j := range 10 {
			subs = append(subs, subExperiment.Remote(i, j))
		}
		vals, err := gray.GetAll(ctx, subs)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, v := range vals {
			sum += v
		}
		return sum, nil
	})
	returnMultiple = gray.Func0x3("test.returnMultiple", func(ctx context.Context) (int, string, float64, error) {
		return 1, "two", 3.5, nil
	})
	fails = gray.Func1("test.fails", func(ctx context.Context, msg string) (int, error) {
		return 0, errors.New(msg)
	})
	panics = gray.Func0("test.panics", func(ctx context.Context) (int, error) {
		panic("This task failed!!")
	})
	exits = gray.Func0("test.exits", func(ctx context.Context) (int, error) {
		os.Exit(3)
		return 0, nil
	})
	killSelf = gray.Func0("test.killSelf", func(ctx context.Context) (int, error) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(10 * time.Second)
		return 0, nil
	})
	pid     = gray.Func0("test.pid", func(ctx context.Context) (int, error) { return os.Getpid(), nil })
	gpuTask = gray.Func0x2("test.gpuTask", func(ctx context.Context) ([]int, string, error) {
		return gray.GPUIDs(ctx), os.Getenv("CUDA_VISIBLE_DEVICES"), nil
	}, gray.GPUs(1))
	bigGPU    = gray.Func0("test.bigGPU", func(ctx context.Context) (int, error) { return 0, nil }, gray.GPUs(3))
	limited   = gray.Func0("test.limited", func(ctx context.Context) (int, error) { return os.Getpid(), nil }, gray.MaxCalls(2))
	customRes = gray.Func0("test.custom", func(ctx context.Context) (int, error) { return 1, nil }, gray.Resource("widget", 2))
	takesFunc = gray.Func1("test.takesFunc", func(ctx context.Context, f func()) (int, error) { return 0, nil })
)

func TestMultipleReturns(t *testing.T) {
	ctx := start(t, gray.Options{})
	a, b, c := returnMultiple.Remote()
	va, _ := gray.Get(ctx, a)
	vb, _ := gray.Get(ctx, b)
	vc, err := gray.Get(ctx, c)
	if err != nil || va != 1 || vb != "two" || vc != 3.5 {
		t.Fatalf("returns = %v %q %v, %v", va, vb, vc, err)
	}
}

func TestTreeReduce(t *testing.T) {
	ctx := start(t, gray.Options{})
	data := make([]gray.Ref[[]float64], 0, 100)
	want := make([]float64, 1000)
	for i := range 100 {
		data = append(data, generateData.Remote(i))
		r := rand.New(rand.NewPCG(uint64(i), 1))
		for k := range want {
			want[k] += r.NormFloat64()
		}
	}
	for len(data) > 1 {
		data = append(data[2:], aggregateData.Remote(data[0], data[1]))
	}
	got, err := gray.Get(ctx, data[0])
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if d := got[k] - want[k]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("element %d = %v, want %v", k, got[k], want[k])
		}
	}
}

func TestNestedWithOneCPU(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 1})
	var results []gray.Ref[int]
	for i := range 5 {
		results = append(results, runExperiment.Remote(i))
	}
	got, err := gray.GetAll(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[45 55 65 75 85]" {
		t.Fatalf("nested = %v, want [45 55 65 75 85]", got)
	}
}

func TestWait(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 3})
	var refs []gray.AnyRef
	for i := range 3 {
		refs = append(refs, nap.Remote(i*300))
	}
	ready, remaining, err := gray.Wait(ctx, refs, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) != 2 || len(remaining) != 1 || remaining[0] != refs[2] {
		t.Fatalf("Wait(2) ready %d remaining %v", len(ready), remaining)
	}
	// With a timeout shorter than the slow tasks, Wait returns fewer.
	refs = refs[:0]
	for _, ms := range []int{0, 50, 5000, 5000, 5000} {
		refs = append(refs, nap.Remote(ms))
	}
	t0 := time.Now()
	ready, remaining, err = gray.Wait(ctx, refs, 4, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) != 2 || len(remaining) != 3 || time.Since(t0) > 4*time.Second {
		t.Fatalf("Wait(4, 1.5s) gave %d ready, %d remaining after %v", len(ready), len(remaining), time.Since(t0))
	}
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{refs[0], refs[0]}, 1, 0); err == nil || !strings.Contains(err.Error(), "unique") {
		t.Fatalf("duplicate refs: err = %v", err)
	}
	if _, _, err := gray.Wait(ctx, refs[:1], 2, 0); err == nil {
		t.Fatal("numReturns > len(refs) should be an error")
	}
}

func TestWaitLoop(t *testing.T) {
	ctx := start(t, gray.Options{})
	var remaining []gray.AnyRef
	for range 5 {
		remaining = append(remaining, inc.Remote(0))
	}
	total := 0
	for range 30 {
		var ready []gray.AnyRef
		var err error
		ready, remaining, err = gray.Wait(ctx, remaining, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		v, err := gray.Get(ctx, ready[0].(gray.Ref[int]))
		if err != nil {
			t.Fatal(err)
		}
		total += v
		remaining = append(remaining, inc.Remote(0))
	}
	if total != 30 {
		t.Fatalf("total = %d", total)
	}
}

func TestErrors(t *testing.T) {
	ctx := start(t, gray.Options{})
	_, err := gray.Get(ctx, fails.Remote("This task failed!!"))
	var te *gray.TaskError
	if !errors.As(err, &te) || te.Function != "test.fails" || !strings.Contains(te.Message, "This task failed!!") || !strings.Contains(te.Worker, "worker") {
		t.Fatalf("returned error: %#v", err)
	}
	_, err = gray.Get(ctx, panics.Remote())
	if !errors.As(err, &te) || !strings.Contains(te.Message, "This task failed!!") || !strings.Contains(te.Stack, "api_test.go") {
		t.Fatalf("panic error: %v", err)
	}
	// A task whose argument failed fails too, wrapping the cause.
	_, err = gray.Get(ctx, inc.Remote(fails.Remote("root cause")))
	if !errors.As(err, &te) || te.Function != "test.inc" || !strings.Contains(err.Error(), "root cause") {
		t.Fatalf("dependent error: %v", err)
	}
	var cause *gray.TaskError
	if !errors.As(te.Cause, &cause) || cause.Function != "test.fails" {
		t.Fatalf("dependent error's cause: %v", te.Cause)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(gray.Errors()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(gray.Errors()); n < 3 {
		t.Fatalf("Errors() lists %d failures, want at least 3", n)
	}
	// The pool still works.
	if v, err := gray.Get(ctx, inc.Remote(1)); err != nil || v != 2 {
		t.Fatalf("after failures: %v, %v", v, err)
	}
}

func TestWorkerDeath(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	for _, f := range []*gray.Function0[int]{exits, killSelf} {
		_, err := gray.Get(ctx, f.Remote())
		var te *gray.TaskError
		if !errors.As(err, &te) || !errors.Is(err, gray.ErrWorkerDied) || !strings.Contains(te.Worker, "worker") {
			t.Fatalf("%s: err = %v", f.Name(), err)
		}
	}
	// Dead workers are replaced.
	refs := make([]gray.Ref[int], 4)
	for i := range refs {
		refs[i] = inc.Remote(i)
	}
	if got, err := gray.GetAll(ctx, refs); err != nil || fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("after deaths: %v, %v", got, err)
	}
}

func TestImpossibleResource(t *testing.T) {
	ctx := start(t, gray.Options{NumGPUs: 2})
	_, err := gray.Get(ctx, bigGPU.Remote())
	if err == nil || !strings.Contains(err.Error(), "GPU=3") || !strings.Contains(err.Error(), "GPU=2") {
		t.Fatalf("impossible request: %v", err)
	}
	_, err = gray.Get(ctx, customRes.Remote())
	if err == nil || !strings.Contains(err.Error(), "widget") {
		t.Fatalf("missing custom resource: %v", err)
	}
}

func TestCustomResource(t *testing.T) {
	ctx := start(t, gray.Options{Resources: map[string]float64{"widget": 2}})
	if v, err := gray.Get(ctx, customRes.Remote()); err != nil || v != 1 {
		t.Fatalf("custom resource task: %v, %v", v, err)
	}
}

func TestGPUIDs(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 4, NumGPUs: 2})
	seen := map[int]bool{}
	for range 4 {
		ids, env := gpuTask.Remote()
		got, err := gray.Get(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := gray.Get(ctx, env)
		if len(got) != 1 || got[0] < 0 || got[0] > 1 || e != fmt.Sprint(got[0]) {
			t.Fatalf("GPU IDs %v, CUDA_VISIBLE_DEVICES %q", got, e)
		}
		seen[got[0]] = true
	}
	// Two at once must get different GPUs.
	a, _ := gpuTask.Remote()
	b, _ := gpuTask.Remote()
	if _, err := gray.GetAll(ctx, []gray.Ref[[]int]{a, b}); err != nil {
		t.Fatal(err)
	}
}

func TestMaxCalls(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 1})
	pids := map[int]int{}
	for range 6 {
		p, err := gray.Get(ctx, limited.Remote())
		if err != nil {
			t.Fatal(err)
		}
		pids[p]++
	}
	for p, n := range pids {
		if n > 2 {
			t.Fatalf("worker %d ran %d calls of a MaxCalls(2) function", p, n)
		}
	}
}

func TestBadInput(t *testing.T) {
	ctx := start(t, gray.Options{})
	_, err := gray.Get(ctx, takesFunc.Remote(func() {}))
	if err == nil || !strings.Contains(err.Error(), "func") {
		t.Fatalf("uncarryable argument: %v", err)
	}
	_, err = gray.Get(ctx, inc.Remote("not an int"))
	if err == nil || !strings.Contains(err.Error(), "want a int") {
		t.Fatalf("wrong argument type: %v", err)
	}
	if _, err := gray.Put(ctx, make(chan int)); err == nil {
		t.Fatal("Put of a channel should fail")
	}
	var zero gray.Ref[int]
	if _, err := gray.Get(ctx, zero); err == nil {
		t.Fatal("Get of the zero Ref should fail")
	}
	r := inc.Remote(1)
	if err := gray.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, r); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Fatalf("Get after Shutdown: %v", err)
	}
	if err := gray.Init(ctx, gray.Options{NumCPUs: 1, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, r); err == nil {
		t.Fatal("a reference from another session should be an error")
	}
}

func TestSeededIDs(t *testing.T) {
	var first []string
	for run := range 2 {
		ctx := context.Background()
		if err := gray.Init(ctx, gray.Options{NumCPUs: 1, NoGPUs: true, Seed: 42, Seeded: true}); err != nil {
			t.Fatal(err)
		}
		p, _ := gray.Put(ctx, 1)
		ids := []string{p.ID().String(), inc.Remote(1).ID().String()}
		_ = gray.Shutdown()
		if run == 0 {
			first = ids
		} else if fmt.Sprint(ids) != fmt.Sprint(first) {
			t.Fatalf("seeded IDs differ: %v vs %v", ids, first)
		}
	}
	if len(first[0]) != 40 {
		t.Fatalf("object ID hex %q", first[0])
	}
}

func TestLocalMode(t *testing.T) {
	ctx := start(t, gray.Options{LocalMode: true})
	if v, err := gray.Get(ctx, inc.Remote(inc.Remote(inc.Remote(0)))); err != nil || v != 3 {
		t.Fatalf("local chain: %v, %v", v, err)
	}
	me, _ := gray.Get(ctx, pid.Remote())
	if me != os.Getpid() {
		t.Fatal("local mode ran a task outside the driver")
	}
	got, err := gray.GetAll(ctx, []gray.Ref[int]{runExperiment.Remote(0), runExperiment.Remote(4)})
	if err != nil || fmt.Sprint(got) != "[45 85]" {
		t.Fatalf("local nested: %v %v", got, err)
	}
	if _, err := gray.Get(ctx, panics.Remote()); err == nil {
		t.Fatal("local panic should be an error")
	}
}

var waitInTask = gray.Func1("test.waitInTask", func(ctx context.Context, n int) (int, error) {
	var refs []gray.AnyRef
	for i := range n {
		refs = append(refs, inc.Remote(i))
	}
	ready, remaining, err := gray.Wait(ctx, refs, n, 0)
	if err != nil {
		return 0, err
	}
	return len(ready)*100 + len(remaining), nil
})

func TestWaitInsideTaskWithOneCPU(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 1})
	if v, err := gray.Get(ctx, waitInTask.Remote(5)); err != nil || v != 500 {
		t.Fatalf("Wait inside a task: %v, %v", v, err)
	}
}

// lateRegistration registers a function on first use, from a test: the
// once keeps -count=2 from registering it twice.
var lateRegistration = sync.OnceValue(func() *gray.Function0[int] {
	return gray.Func0("test.lateRegistration", func(ctx context.Context) (int, error) { return 1, nil })
})

func TestUnregisteredInWorkers(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 1})
	// Registered after the workers started (and never in them): a mistake
	// the error must explain.
	_, err := gray.Get(ctx, lateRegistration().Remote())
	if err == nil || !strings.Contains(err.Error(), "not registered") || !strings.Contains(err.Error(), "package level") {
		t.Fatalf("unregistered in the worker: %v", err)
	}
}

func TestGetHonoursContext(t *testing.T) {
	ctx := start(t, gray.Options{})
	slow := nap.Remote(2000)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := gray.Get(short, slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get past its deadline: %v", err)
	}
	cctx, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, _, err := gray.Wait(cctx, []gray.AnyRef{slow}, 1, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	// The result is still there for a patient caller.
	if v, err := gray.Get(ctx, slow); err != nil || v != 2000 {
		t.Fatalf("Get after the deadline passed: %v, %v", v, err)
	}
}
