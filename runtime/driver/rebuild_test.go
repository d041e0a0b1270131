package driver_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/ids"
)

// A rebuild that fails because the store is full of pinned objects is not
// the reference's value for good: once the pins are freed, the same Get
// rebuilds the object again and succeeds.
func TestFailedRebuildIsRetriedOnceTheStoreHasRoom(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	a := stMake.Remote(5) // 160 KB, in shared memory
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{a}, 1, 0); err != nil {
		t.Fatal(err)
	}
	// Values held from Get pin their objects: three of 300 KB leave no
	// room for a, which is evicted and cannot be rebuilt while they stay.
	var pinned []gray.AnyRef
	var held [][]uint8
	for range 3 {
		r, err := gray.Put(ctx, make([]uint8, 300<<10))
		if err != nil {
			t.Fatal(err)
		}
		v, err := gray.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		pinned, held = append(pinned, r), append(held, v)
	}
	if n.SharedStats().Evictions < 1 {
		t.Fatalf("%d evictions, want a evicted", n.SharedStats().Evictions)
	}
	if _, err := gray.Get(ctx, a); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("Get of an evicted result while the store is full of pinned objects: err = %v, want one saying the store is full", err)
	}
	runtime.KeepAlive(held)
	held = nil
	if err := gray.Free(ctx, pinned...); err != nil {
		t.Fatal(err)
	}
	x, err := gray.Get(ctx, a)
	if err != nil {
		t.Fatalf("Get after freeing the pinned objects: %v (a failed rebuild became the reference's value)", err)
	}
	if len(x) != 20000 || x[1] != 6 {
		t.Fatalf("rebuilt value: len %d, x[1] = %v", len(x), x[1])
	}
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
}

// The actor table is kept in the control store, which a cluster shares:
// the node records an actor's type, its worker once it started and why it
// died there, and reads it back to route calls.
func TestActorTableInControlStore(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	h, err := optsActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, optsPing.Remote(h)); err != nil || v != 1 {
		t.Fatalf("ping = %v, %v", v, err)
	}
	rec, ok := n.Actor(h.ID())
	if !ok || rec.Type != "shared.Opts" || !strings.HasPrefix(rec.Worker, "worker ") || rec.Death != "" {
		t.Fatalf("live actor's record %+v (%v), want its type and worker", rec, ok)
	}
	if err := gray.Kill(h); err != nil {
		t.Fatal(err)
	}
	if rec, _ := n.Actor(h.ID()); !strings.Contains(rec.Death, "killed") {
		t.Fatalf("killed actor's record %+v, want the reason it died", rec)
	}
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
}

// After references inside values, tasks taking references, and a worker
// that dies holding a decoded reference, the object table's invariants
// hold and, once the driver dropped everything, it records nothing: every
// claim was released.
func TestObjectTableEmptyAfterWorkload(t *testing.T) {
	ctx := initNested(t)
	n := theDriver(t).Node
	inner, err := gray.Put(ctx, []float64{5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, itDerefThenDie.Remote(holder{R: inner})); !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("task whose worker exits: %v, want ErrWorkerDied", err)
	}
	h := itMakeHolder.Remote()
	if v, err := gray.Get(ctx, h); err != nil || v.R.ID() == (ids.ObjectID{}) {
		t.Fatalf("holder: %+v, %v", v, err)
	}
	var rs []gray.Ref[int]
	for i := range 5 {
		r, err := gray.Put(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if s, err := gray.Get(ctx, itSumRefs.Remote(rs)); err != nil || s != 10 {
		t.Fatalf("sum = %d, %v", s, err)
	}
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
	inner, h, rs = gray.Ref[[]float64]{}, gray.Ref[holder]{}, nil
	if left := settle(t, 0); left != 0 {
		t.Fatalf("%d objects remain after the driver dropped every reference", left)
	}
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
	if k := n.Recorded(); k != 0 {
		t.Fatalf("the object table records %d objects after everything was freed", k)
	}
}
