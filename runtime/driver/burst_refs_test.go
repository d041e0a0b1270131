package driver_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/gray-ml/gray"
)

// The results of a burst of calls share finalizers in blocks
// (refblock.go in the root package): every object is still freed once its
// references go, a kept reference keeps its object readable however many of
// its burst's others were dropped, and a call made after a Get is freed on
// its own while a reference of the burst is kept.
func TestBurstResultsAreFreed(t *testing.T) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	const n = 500 // several blocks
	refs := make([]gray.Ref[int], n)
	for i := range refs {
		refs[i] = itInc.Remote(i)
	}
	vals, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != i+1 {
			t.Fatalf("call %d returned %d", i, v)
		}
	}
	// Keep one reference from the middle of the burst, drop the rest.
	kept := refs[n/2]
	refs, vals = nil, nil
	// The blocks other than the kept one's hold nothing: at most a block's
	// worth (63) stays.
	if left := settle(t, 63); left > 63 {
		t.Fatalf("%d of %d objects remain after dropping all but one reference", left, n)
	}
	runtime.GC()
	runtime.GC()
	if v, err := gray.Get(ctx, kept); err != nil || v != n/2+1 {
		t.Fatalf("the kept reference after its burst's others were collected: %v, %v", v, err)
	}

	// After that Get, calls that are each consumed before the next get
	// their own release: they do not pile up beside the kept block.
	before := objects(t)
	for i := range 200 {
		if _, err := gray.Get(ctx, itInc.Remote(i)); err != nil {
			t.Fatal(err)
		}
	}
	if left := settle(t, before); left > before {
		t.Fatalf("%d objects after 200 consumed calls, %d before: their references were not released one by one", left, before)
	}
	runtime.KeepAlive(kept)

	// Once the last reference goes, its block's objects go too.
	kept = gray.Ref[int]{}
	if left := settle(t, 0); left > 0 {
		t.Fatalf("%d objects remain after every reference was dropped", left)
	}
}
