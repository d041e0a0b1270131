package driver_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

var (
	// itSum sums x once its gate opens: after the driver dropped its
	// reference to x.
	itSum = gray.Func2("internal.sum", func(ctx context.Context, x []float64, g gate) (float64, error) {
		if err := g.wait(ctx); err != nil {
			return 0, err
		}
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s, nil
	})
	itInc = gray.Func1("internal.inc", func(ctx context.Context, x int) (int, error) { return x + 1, nil })
)

type holder struct{ R gray.Ref[[]float64] }

var itDeref = gray.Func1("internal.deref", func(ctx context.Context, h holder) (float64, error) {
	x, err := gray.Get(ctx, h.R)
	if err != nil {
		return 0, err
	}
	return x[0], nil
})

func objects(t *testing.T) int {
	t.Helper()
	return theDriver(t).Node.Objects()
}

// settle collects dropped references until the store holds at most max
// objects or time runs out.
func settle(t *testing.T, max int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		n := objects(t)
		if n <= max || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDroppedObjectsAreFreed: memory stays flat in a put-and-drop loop and
// a call-and-drop loop, while objects still needed survive.
func TestDroppedObjectsAreFreed(t *testing.T) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	big := make([]float64, 1<<12)
	for i := range 150 {
		r, err := gray.Put(ctx, big)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gray.Get(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := gray.Get(ctx, itInc.Remote(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("objects before collection: %d", objects(t))
	if n := settle(t, 20); n > 20 {
		t.Fatalf("%d objects remain after dropping 300", n)
	}

	// An argument whose only reference the driver dropped stays until the
	// task has it.
	r, _ := gray.Put(ctx, []float64{1, 2, 3})
	dropped := newGate(t, "dropped")
	res := itSum.Remote(r, dropped)
	r = gray.Ref[[]float64]{}
	runtime.GC()
	runtime.GC()
	dropped.open(t)
	if v, err := gray.Get(ctx, res); err != nil || v != 6 {
		t.Fatalf("sum of a dropped argument = %v, %v", v, err)
	}

	// A reference inside a task's argument stays while the task runs,
	// though the driver dropped its own.
	inner, _ := gray.Put(ctx, []float64{42})
	out := itDeref.Remote(holder{R: inner})
	inner = gray.Ref[[]float64]{}
	runtime.GC()
	runtime.GC()
	if v, err := gray.Get(ctx, out); err != nil || v != 42 {
		t.Fatalf("escaped reference: %v, %v", v, err)
	}
}
