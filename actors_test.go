package gray_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

type Counter struct{ value int }

var (
	counterType = gray.Actor0("test.Counter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil })
	increment   = gray.Method0(counterType, "increment", func(c *Counter, ctx context.Context) (int, error) {
		c.value++
		return c.value, nil
	})
	getCounter = gray.Method0(counterType, "get", func(c *Counter, ctx context.Context) (int, error) { return c.value, nil })
	addTo      = gray.Method1(counterType, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
	// useCounter calls the actor from inside a task.
	useCounter = gray.Func2("test.useCounter", func(ctx context.Context, h gray.Handle[Counter], n int) (int, error) {
		var last gray.Ref[int]
		for range n {
			last = increment.Remote(h)
		}
		return gray.Get(ctx, last)
	})

	// relay is an actor that calls another actor through a handle it was given.
	relayType = gray.Actor1("test.Relay", func(ctx context.Context, target gray.Handle[Counter]) (*Relay, error) {
		return &Relay{target: target}, nil
	})
	relayAdd = gray.Method1(relayType, "add", func(r *Relay, ctx context.Context, n int) (int, error) {
		return gray.Get(ctx, addTo.Remote(r.target, n))
	})

	// Policy holds weights received by reference, like a rollout worker.
	policyType = gray.Actor1("test.Policy", func(ctx context.Context, w []float64) (*Policy, error) {
		return &Policy{w: w}, nil
	})
	setWeights = gray.Method1(policyType, "setWeights", func(p *Policy, ctx context.Context, w []float64) (int, error) {
		p.w = w
		return len(w), nil
	})
	sumWeights = gray.Method0(policyType, "sum", func(p *Policy, ctx context.Context) (float64, error) {
		s := 0.0
		for _, x := range p.w {
			s += x
		}
		return s, nil
	})

	gpuActorType = gray.Actor0("test.GPUActor", func(ctx context.Context) (*GPUActor, error) {
		return &GPUActor{ids: gray.GPUIDs(ctx)}, nil
	}, gray.GPUs(1))
	gpuIDs = gray.Method0(gpuActorType, "ids", func(a *GPUActor, ctx context.Context) ([]int, error) { return a.ids, nil })

	badActorType = gray.Actor1("test.Bad", func(ctx context.Context, msg string) (*Counter, error) {
		return nil, errors.New(msg)
	})
	badGet = gray.Method0(badActorType, "get", func(c *Counter, ctx context.Context) (int, error) { return c.value, nil })
)

type Policy struct{ w []float64 }

// Relay forwards calls to a Counter actor.
type Relay struct{ target gray.Handle[Counter] }

type GPUActor struct{ ids []int }

func TestCounters(t *testing.T) {
	ctx := start(t, gray.Options{})
	counters := make([]gray.Handle[Counter], 10)
	for i := range counters {
		h, err := counterType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counters[i] = h
	}
	var refs []gray.Ref[int]
	for _, c := range counters {
		refs = append(refs, increment.Remote(c))
	}
	got, err := gray.GetAll(ctx, refs)
	if err != nil || fmt.Sprint(got) != "[1 1 1 1 1 1 1 1 1 1]" {
		t.Fatalf("ten counters: %v, %v", got, err)
	}
	refs = refs[:0]
	for range 5 {
		refs = append(refs, increment.Remote(counters[0]))
	}
	got, err = gray.GetAll(ctx, refs)
	if err != nil || fmt.Sprint(got) != "[2 3 4 5 6]" {
		t.Fatalf("one counter five times: %v, %v", got, err)
	}
}

func TestHandlePassedToTasks(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 4})
	h, err := counterType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []gray.Ref[int]
	for range 4 {
		refs = append(refs, useCounter.Remote(h, 25))
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, getCounter.Remote(h)); err != nil || v != 100 {
		t.Fatalf("counter after 4 tasks x 25 = %d, %v", v, err)
	}
}

func TestActorWithRefArguments(t *testing.T) {
	ctx := start(t, gray.Options{})
	w0, _ := gray.Put(ctx, []float64{1, 2, 3})
	p, err := policyType.Remote(ctx, w0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := gray.Get(ctx, sumWeights.Remote(p)); err != nil || s != 6 {
		t.Fatalf("sum = %v, %v", s, err)
	}
	w1, _ := gray.Put(ctx, []float64{10, 20})
	setWeights.Remote(p, w1)
	if s, err := gray.Get(ctx, sumWeights.Remote(p)); err != nil || s != 30 {
		t.Fatalf("sum after setWeights = %v, %v", s, err)
	}
}

func TestKillActor(t *testing.T) {
	ctx := start(t, gray.Options{NumGPUs: 1})
	h, err := gpuActorType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := gray.Get(ctx, gpuIDs.Remote(h))
	if err != nil || fmt.Sprint(ids) != "[0]" {
		t.Fatalf("GPU actor ids %v, %v", ids, err)
	}
	if err := gray.Kill(h); err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, gpuIDs.Remote(h))
	if !errors.Is(err, gray.ErrActorDead) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("method on a killed actor: %v", err)
	}
	// Killing on purpose is no task failure.
	for _, e := range gray.Errors() {
		if strings.Contains(e.Error(), "killed") {
			t.Errorf("a deliberate Kill was reported as a failure: %v", e)
		}
	}
	// Its GPU is free again: a second GPU actor can start.
	h2, err := gpuActorType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := gray.Get(ctx, gpuIDs.Remote(h2)); err != nil || fmt.Sprint(ids) != "[0]" {
		t.Fatalf("second GPU actor: %v, %v", ids, err)
	}
}

func TestActorReleasedWhenNoHandleRemains(t *testing.T) {
	ctx := start(t, gray.Options{NumGPUs: 1})
	func() {
		h, err := gpuActorType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gray.Get(ctx, gpuIDs.Remote(h)); err != nil {
			t.Fatal(err)
		}
	}()
	// The only GPU comes back once the handle is collected.
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		h, err := gpuActorType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = gray.Get(wctx, gpuIDs.Remote(h))
		cancel()
		if err == nil {
			return
		}
		_ = gray.Kill(h)
		if time.Now().After(deadline) {
			t.Fatal("the GPU of an actor with no handle left was never released")
		}
	}
}

func TestActorConstructorFails(t *testing.T) {
	ctx := start(t, gray.Options{})
	h, err := badActorType.Remote(ctx, "no luck")
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, badGet.Remote(h))
	if err == nil || !strings.Contains(err.Error(), "no luck") || !strings.Contains(err.Error(), "constructor") {
		t.Fatalf("method after a failed constructor: %v", err)
	}
}

func TestActorBadInput(t *testing.T) {
	ctx := start(t, gray.Options{})
	if _, err := policyType.Remote(ctx); err == nil {
		t.Fatal("missing constructor argument should be an error")
	}
	if _, err := policyType.Remote(ctx, "x"); err == nil {
		t.Fatal("wrong constructor argument type should be an error")
	}
	var zero gray.Handle[Counter]
	if _, err := gray.Get(ctx, increment.Remote(zero)); err == nil {
		t.Fatal("a method on the zero handle should fail")
	}
	if _, err := gpuActorType.Remote(ctx); err == nil || !strings.Contains(err.Error(), "GPU") {
		t.Fatalf("GPU actor without GPUs: %v", err)
	}
}

func TestHandlePassedToActor(t *testing.T) {
	ctx := start(t, gray.Options{})
	c, err := counterType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := relayType.Remote(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{5, 12} {
		want := []int{5, 17}[i]
		if v, err := gray.Get(ctx, relayAdd.Remote(r, n)); err != nil || v != want {
			t.Fatalf("relayed add %d = %d, %v; want %d", n, v, err, want)
		}
	}
	if v, err := gray.Get(ctx, getCounter.Remote(c)); err != nil || v != 17 {
		t.Fatalf("counter after two relayed adds = %d, %v; want 17", v, err)
	}
}

func TestKillActorsWhileStarting(t *testing.T) {
	ctx := start(t, gray.Options{})
	for range 5 {
		h, err := counterType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := gray.Kill(h); err != nil {
			t.Fatal(err)
		}
	}
	// Killed actors are no sign of a broken worker setup.
	h, err := counterType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, increment.Remote(h)); err != nil || v != 1 {
		t.Fatalf("after killing starting actors: %v, %v", v, err)
	}
	if v, err := gray.Get(ctx, inc.Remote(1)); err != nil || v != 2 {
		t.Fatalf("tasks after killing starting actors: %v, %v", v, err)
	}
}

// Busy is an actor whose first method keeps it busy until the driver says.
type Busy struct{}

var (
	busyType = gray.Actor0("test.Busy", func(ctx context.Context) (*Busy, error) { return &Busy{}, nil })
	// busyUntil returns once the file at path exists.
	busyUntil = gray.Method1(busyType, "until", func(b *Busy, ctx context.Context, path string) (bool, error) {
		for {
			if _, err := os.Stat(path); err == nil {
				return true, nil
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	busyLen = gray.Method1(busyType, "len", func(b *Busy, ctx context.Context, p []byte) (int, error) { return len(p), nil })
)

// Calls queued behind a long-running method are accepted at once, however
// many: Remote never waits for the actor to take them in, so a driver
// can submit work to a busy actor (and then release it) without blocking.
func TestRemoteDoesNotWaitForBusyActor(t *testing.T) {
	ctx := start(t, gray.Options{})
	h, err := busyType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	first := busyUntil.Remote(h, release)
	// 8 MiB of calls: far more than the socket and the worker's reader hold.
	const calls, size = 2048, 4 << 10
	submitted := make(chan []gray.Ref[int], 1)
	go func() {
		refs := make([]gray.Ref[int], calls)
		for i := range refs {
			refs[i] = busyLen.Remote(h, make([]byte, size))
		}
		submitted <- refs
	}()
	var refs []gray.Ref[int]
	select {
	case refs = <-submitted:
	case <-time.After(30 * time.Second):
		t.Fatal("Remote blocked while the actor was busy: the calls were not queued")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := gray.Get(ctx, first); err != nil || !ok {
		t.Fatalf("busy method: %v, %v", ok, err)
	}
	got, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range got {
		if n != size {
			t.Fatalf("call %d returned %d, want %d", i, n, size)
		}
	}
}

// Shutdown does not hang on actors that are busy with calls queued behind
// them beyond what their sockets hold.
func TestShutdownWithBusyActors(t *testing.T) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	never := filepath.Join(t.TempDir(), "never")
	for range 2 {
		h, err := busyType.Remote(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Once it answers, its worker is connected and takes calls at once.
		if _, err := gray.Get(ctx, busyLen.Remote(h, nil)); err != nil {
			t.Fatal(err)
		}
		busyUntil.Remote(h, never)
		for range 1024 {
			busyLen.Remote(h, make([]byte, 8<<10))
		}
	}
	done := make(chan error, 1)
	go func() { done <- gray.Shutdown() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Shutdown hung on busy actors")
	}
}
