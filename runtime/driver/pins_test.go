package driver_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/gray-ml/gray"
)

var pinsSum = gray.Func1("internal.pinsSum", func(ctx context.Context, h holder) (float64, error) {
	x, err := gray.Get(ctx, h.R)
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s, err
})

// Store pins live in the object table (objtable.ArgPin, ReadPin,
// DriverPin): a task's shared argument, what a worker's task got with Get,
// what the driver's Get mapped. The table's pins are held by the store at
// every step, a dead worker's read pins are released, and once the object
// is freed nothing is pinned nor recorded.
func TestStorePinsInTheObjectTable(t *testing.T) {
	n := startStore(t, 64<<20, 2)
	ctx := context.Background()
	x := make([]float64, 1<<17) // 1 MiB: in shared memory
	for i := range x {
		x[i] = 1
	}
	r, err := gray.Put(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if err := n.Check(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	if s, err := gray.Get(ctx, pinsSum.Remote(holder{R: r})); err != nil || s != 1<<17 {
		t.Fatalf("a worker's Get: sum %v, %v", s, err)
	}
	check("after a worker's Get")
	if rep, err := gray.Get(ctx, stProbe.Remote(r)); err != nil || !rep.Mapped || rep.Sum != 1<<17 {
		t.Fatalf("a task's shared argument: %+v, %v", rep, err)
	}
	check("after a task's shared argument")
	v, err := gray.Get(ctx, r)
	if err != nil || len(v) != len(x) {
		t.Fatalf("the driver's Get: len %d, %v", len(v), err)
	}
	check("after the driver's Get")
	if n.SharedStats().PinnedBytes == 0 {
		t.Fatal("the driver's Get left nothing pinned; its value maps the object")
	}
	if _, err := gray.Get(ctx, itDerefThenDie.Remote(holder{R: r})); !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("a worker that dies after its Get: %v, want ErrWorkerDied", err)
	}
	check("after a worker died holding a read pin")
	runtime.KeepAlive(v)
	v = nil
	if err := gray.Free(ctx, r); err != nil {
		t.Fatal(err)
	}
	check("after Free")
	// The argument values that refer to r (holder) go with the driver's
	// next collections; then r is freed and its pins with it.
	settleStore(t, n, 0)
	check("once everything was freed")
	if p := n.SharedStats().PinnedBytes; p != 0 {
		t.Fatalf("%d bytes pinned after the object was freed and every task ended", p)
	}
}
