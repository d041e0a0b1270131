package gray

import (
	"context"
	"github.com/gray-ml/gray/runtime/driver"
	"runtime"
	"testing"
	"time"
)

var (
	itSum = Func1("internal.sum", func(ctx context.Context, x []float64) (float64, error) {
		time.Sleep(20 * time.Millisecond) // long enough for the driver to drop its reference
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s, nil
	})
	itInc = Func1("internal.inc", func(ctx context.Context, x int) (int, error) { return x + 1, nil })
)

type holder struct{ R Ref[[]float64] }

var itDeref = Func1("internal.deref", func(ctx context.Context, h holder) (float64, error) {
	x, err := Get(ctx, h.R)
	if err != nil {
		return 0, err
	}
	return x[0], nil
})

func objects(t *testing.T) int {
	t.Helper()
	return current.Load().insp.(*driver.Driver).Node.Objects()
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
	if err := Init(ctx, Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer Shutdown()
	big := make([]float64, 1<<12)
	for i := range 150 {
		r, err := Put(ctx, big)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Get(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := Get(ctx, itInc.Remote(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("objects before collection: %d", objects(t))
	if n := settle(t, 20); n > 20 {
		t.Fatalf("%d objects remain after dropping 300", n)
	}

	// An argument whose only reference the driver dropped stays until the
	// task has it.
	r, _ := Put(ctx, []float64{1, 2, 3})
	res := itSum.Remote(r)
	r = Ref[[]float64]{}
	runtime.GC()
	runtime.GC()
	if v, err := Get(ctx, res); err != nil || v != 6 {
		t.Fatalf("sum of a dropped argument = %v, %v", v, err)
	}

	// A reference inside a task's argument stays while the task runs,
	// though the driver dropped its own.
	inner, _ := Put(ctx, []float64{42})
	out := itDeref.Remote(holder{R: inner})
	inner = Ref[[]float64]{}
	runtime.GC()
	runtime.GC()
	if v, err := Get(ctx, out); err != nil || v != 42 {
		t.Fatalf("escaped reference: %v, %v", v, err)
	}
}
