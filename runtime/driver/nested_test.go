package driver_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// Remote functions for the tests of references inside values.
var (
	itMakeHolder = gray.Func0("internal.makeHolder", func(ctx context.Context) (holder, error) {
		r, err := gray.Put(ctx, []float64{7, 8, 9})
		if err != nil {
			return holder{}, err
		}
		return holder{R: r}, nil
	})
	itSumRefs = gray.Func1("internal.sumRefs", func(ctx context.Context, rs []gray.Ref[int]) (int, error) {
		vs, err := gray.GetAll(ctx, rs)
		if err != nil {
			return 0, err
		}
		s := 0
		for _, v := range vs {
			s += v
		}
		return s, nil
	})
)

// collect runs the collector until the finalizers of everything it found
// unreachable have run, so that a reference wrongly dropped has been freed
// by the end (a Ref's finalizer drops it at once). Finalizers run one at a
// time, and a batch newest first: a sentinel's finalizer having run shows
// that its batch, holding everything queued before it, was taken; a second
// sentinel, queued after the first ran, runs once that batch is done.
func collect(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range 2 {
		ran := make(chan struct{})
		// 64 bytes: not a tiny object, which may never be finalized.
		runtime.SetFinalizer(new([64]byte), func(*[64]byte) { close(ran) })
		for done := false; !done; {
			runtime.GC()
			select {
			case <-ran:
				done = true
			case <-time.After(10 * time.Millisecond): // collect again
			case <-deadline:
				t.Fatal("the collector ran no finalizer within 10 s")
			}
		}
	}
}

func initNested(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gray.Shutdown() })
	return ctx
}

// TestRefInsideStruct: an object named inside a Put value lives while the
// value does, even once the driver dropped its own reference, and is freed
// with it.
func TestRefInsideStruct(t *testing.T) {
	ctx := initNested(t)
	for _, free := range []bool{false, true} {
		inner, err := gray.Put(ctx, []float64{42})
		if err != nil {
			t.Fatal(err)
		}
		outer, err := gray.Put(ctx, holder{R: inner})
		if err != nil {
			t.Fatal(err)
		}
		inner = gray.Ref[[]float64]{}
		collect(t)
		if n := objects(t); n != 2 {
			t.Fatalf("free=%v: %d objects while the outer one is alive, want 2 (the inner one was freed?)", free, n)
		}
		h, err := gray.Get(ctx, outer)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := gray.Get(ctx, h.R); err != nil || v[0] != 42 {
			t.Fatalf("free=%v: inner object through the outer one: %v, %v", free, v, err)
		}
		if free {
			if err := gray.Free(ctx, outer); err != nil {
				t.Fatal(err)
			}
			// The decoded reference still holds the inner object.
			collect(t)
			if v, err := gray.Get(ctx, h.R); err != nil || v[0] != 42 {
				t.Fatalf("inner object after freeing the outer one, while still referred to: %v, %v", v, err)
			}
		}
		outer, h = gray.Ref[holder]{}, holder{}
		if n := settle(t, 0); n != 0 {
			t.Fatalf("free=%v: %d objects remain after dropping every reference", free, n)
		}
	}
}

// TestWorkerReturnsRefInsideStruct: a worker returns a struct naming an
// object it Put; the object outlives the worker's reference and is freed
// once the driver drops the result.
func TestWorkerReturnsRefInsideStruct(t *testing.T) {
	ctx := initNested(t)
	out := itMakeHolder.Remote()
	h, err := gray.Get(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	out = gray.Ref[holder]{}
	collect(t)
	if v, err := gray.Get(ctx, h.R); err != nil || len(v) != 3 || v[2] != 9 {
		t.Fatalf("object put by a worker, read through the returned struct: %v, %v", v, err)
	}
	// A task reads it too, through a struct argument.
	if v, err := gray.Get(ctx, itDeref.Remote(h)); err != nil || v != 7 {
		t.Fatalf("task reading the object through a struct argument: %v, %v", v, err)
	}
	h = holder{}
	if n := settle(t, 0); n != 0 {
		t.Fatalf("%d objects remain after dropping every reference", n)
	}
}

// TestSliceOfRefsInsideValue: 100 objects named by a slice inside a value
// (Put, and passed to a task) live while it does and are freed with it.
func TestSliceOfRefsInsideValue(t *testing.T) {
	ctx := initNested(t)
	rs := make([]gray.Ref[int], 100)
	want := 0
	for i := range rs {
		var err error
		if rs[i], err = gray.Put(ctx, i); err != nil {
			t.Fatal(err)
		}
		want += i
	}
	outer, err := gray.Put(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	sum := itSumRefs.Remote(rs)
	rs = nil
	collect(t)
	if v, err := gray.Get(ctx, sum); err != nil || v != want {
		t.Fatalf("task summing 100 references passed in a slice: %v, %v; want %d", v, err, want)
	}
	sum = gray.Ref[int]{}
	if n := objects(t); n < 101 {
		t.Fatalf("%d objects while the slice of 100 references is alive, want at least 101", n)
	}
	got, err := gray.Get(ctx, outer)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := gray.GetAll(ctx, got)
	if err != nil {
		t.Fatalf("objects named by the stored slice: %v", err)
	}
	for i, v := range vs {
		if v != i {
			t.Fatalf("object %d = %d", i, v)
		}
	}
	outer, got = gray.Ref[[]gray.Ref[int]]{}, nil
	if n := settle(t, 0); n != 0 {
		t.Fatalf("%d objects remain after dropping the slice", n)
	}
}

type bigHolder struct {
	Name string
	R    gray.Ref[[]float64]
}

// TestNestedPutLoopStaysFlat: putting and dropping values that name 1 MB
// objects frees them all, shared memory included.
func TestNestedPutLoopStaysFlat(t *testing.T) {
	ctx := initNested(t)
	big := make([]float64, 1<<17) // 1 MiB
	for i := range 60 {
		big[0] = float64(i)
		inner, err := gray.Put(ctx, big)
		if err != nil {
			t.Fatal(err)
		}
		outer, err := gray.Put(ctx, bigHolder{Name: "x", R: inner})
		if err != nil {
			t.Fatal(err)
		}
		h, err := gray.Get(ctx, outer)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := gray.Get(ctx, h.R); err != nil || v[0] != float64(i) {
			t.Fatalf("round %d: %v", i, err)
		}
		if i%10 == 0 {
			runtime.GC()
		}
	}
	if n := settle(t, 0); n != 0 {
		t.Fatalf("%d objects remain after dropping every reference", n)
	}
	if st := theDriver(t).Node.SharedStats(); st.Used > 2<<20 {
		t.Fatalf("shared memory holds %d bytes after every object was freed: %+v", st.Used, st)
	}
}

// itDerefThenDie reads the object named inside its argument, so that its
// worker holds the decoded reference, then kills its worker.
var itDerefThenDie = gray.Func1("internal.derefThenDie", func(ctx context.Context, h holder) (float64, error) {
	if _, err := gray.Get(ctx, h.R); err != nil {
		return 0, err
	}
	os.Exit(3)
	return 0, nil
})

// TestDeadWorkersHoldsAreDropped: a worker that dies holding a reference
// it decoded out of a value does not keep the object alive for the rest of
// the session.
func TestDeadWorkersHoldsAreDropped(t *testing.T) {
	ctx := initNested(t)
	inner, err := gray.Put(ctx, []float64{5})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, itDerefThenDie.Remote(holder{R: inner}))
	if !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("task whose worker exits: %v, want ErrWorkerDied", err)
	}
	inner = gray.Ref[[]float64]{}
	if n := settle(t, 0); n != 0 {
		t.Fatalf("%d objects remain after the driver dropped its reference and the worker holding one died", n)
	}
}
