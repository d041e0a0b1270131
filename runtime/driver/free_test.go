package driver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/codec"
)

var stPutFree = gray.Func1("store.putfree", func(ctx context.Context, n int) (string, error) {
	r, err := gray.Put(ctx, make([]float64, n))
	if err != nil {
		return "", err
	}
	if err := gray.Free(ctx, r); err != nil {
		return "", err
	}
	// A copy of the reference decoded elsewhere would not know it was
	// freed: the driver's answer must say so too.
	_, err = gray.Get(ctx, r)
	if !errors.Is(err, gray.ErrFreed) {
		return "", errors.New("Get after Free in a task did not fail with ErrFreed")
	}
	return err.Error(), nil
})

// Free releases a large object at once: its pages are reused by the next
// put, later Gets and tasks given the reference fail clearly, and freeing
// again is harmless.
func TestFreeReleasesAtOnceAndGetsFail(t *testing.T) {
	n := startStore(t, 256<<20, 2)
	ctx := context.Background()
	big := make([]float64, 1<<20) // 8 MiB: in shared memory
	var refs []gray.Ref[[]float64]
	for range 10 {
		r, err := gray.Put(ctx, big)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gray.Get(ctx, r); err != nil { // a Get pins until freed
			t.Fatal(err)
		}
		if err := gray.Free(ctx, r); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r) // still reachable: only Free can have released it
	}
	st := n.SharedStats()
	if st.Objects != 0 {
		t.Fatalf("store holds %d objects after freeing every one", st.Objects)
	}
	if st.ReusedBytes < 8*int64(len(big)*8) {
		t.Errorf("only %d bytes were put into reused pages, want at least 9 of the 10 puts", st.ReusedBytes)
	}
	if _, err := gray.Get(ctx, refs[0]); !errors.Is(err, gray.ErrFreed) {
		t.Fatalf("Get after Free: %v, want ErrFreed", err)
	}
	// A copy decoded from a value (no shared state with refs[0]): the
	// driver itself answers that the object was freed.
	enc, err := codec.Marshal(refs[0])
	if err != nil {
		t.Fatal(err)
	}
	var decoded gray.Ref[[]float64]
	if err := codec.Unmarshal(enc, &decoded); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, decoded); !errors.Is(err, gray.ErrFreed) {
		t.Fatalf("Get of a decoded copy after Free: %v, want ErrFreed", err)
	}
	if err := gray.Free(ctx, refs[0]); err != nil {
		t.Fatalf("second Free: %v", err)
	}
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{refs[1]}, 1, 0); !errors.Is(err, gray.ErrFreed) {
		t.Fatalf("Wait after Free: %v, want ErrFreed", err)
	}
	msg, err := gray.Get(ctx, stPutFree.Remote(1<<16))
	if err != nil {
		t.Fatalf("Free inside a task: %v", err)
	}
	t.Logf("inside a task: %s", msg)
	small, err := gray.Put(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := gray.Free(ctx, small); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, small); !errors.Is(err, gray.ErrFreed) {
		t.Fatalf("Get of a small object after Free: %v, want ErrFreed", err)
	}
	if err := gray.Free(ctx, gray.Ref[int]{}); err == nil {
		t.Fatal("Free of the zero Ref succeeded")
	}
}

func TestFreeLocalMode(t *testing.T) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{LocalMode: true}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	r, err := gray.Put(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := gray.Free(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, r); !errors.Is(err, gray.ErrFreed) {
		t.Fatalf("Get after Free in local mode: %v, want ErrFreed", err)
	}
}

// Large task results are written into room the driver reserves, so a
// freed result's pages serve the next one.
func TestTaskResultsReusePages(t *testing.T) {
	n := startStore(t, 256<<20, 1)
	ctx := context.Background()
	const size = 4 << 20
	for range 8 {
		r := stBig.Remote(size)
		v, err := gray.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != size {
			t.Fatalf("result has %d bytes, want %d", len(v), size)
		}
		if err := gray.Free(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st := n.SharedStats()
	if st.ReusedBytes < 6*size {
		t.Errorf("%d of 8 results' bytes were written into reused pages (%+v), want at least 6 results", st.ReusedBytes/size, st)
	}
	if st.Objects != 0 {
		t.Errorf("%d objects left after freeing every result", st.Objects)
	}
}
