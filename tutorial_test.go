package gray_test

import (
	"context"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/graytest"
)

var (
	add2 = gray.Func2("test.add2", func(ctx context.Context, a, b int) (int, error) { return a + b, nil })
	inc  = gray.Func1("test.inc", func(ctx context.Context, x int) (int, error) { return x + 1, nil })
	nap  = gray.Func1("test.nap", func(ctx context.Context, ms int) (int, error) {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return ms, nil
	})
)

// start initialises gray for one test and shuts it down after.
func start(t *testing.T, opts gray.Options) context.Context { return graytest.Start(t, opts) }

func TestPutGet(t *testing.T) {
	ctx := start(t, gray.Options{})
	r, err := gray.Put(ctx, "example")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, r); err != nil || v != "example" {
		t.Fatalf("Get = %q, %v; want example", v, err)
	}
	var refs []gray.Ref[int]
	for i := range 10 {
		r, err := gray.Put(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	got, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("GetAll = %v", got)
		}
	}
}

func TestArgumentsByValueOrRef(t *testing.T) {
	ctx := start(t, gray.Options{})
	one, _ := gray.Put(ctx, 1)
	two, _ := gray.Put(ctx, 2)
	for _, r := range []gray.Ref[int]{add2.Remote(1, 2), add2.Remote(1, two), add2.Remote(one, two)} {
		if v, err := gray.Get(ctx, r); err != nil || v != 3 {
			t.Fatalf("add2 = %d, %v; want 3", v, err)
		}
	}
}

func TestChain(t *testing.T) {
	ctx := start(t, gray.Options{})
	x := inc.Remote(0)
	y := inc.Remote(x)
	z := inc.Remote(y)
	if v, err := gray.Get(ctx, z); err != nil || v != 3 {
		t.Fatalf("f(f(f(0))) = %d, %v; want 3", v, err)
	}
}

func TestParallelSleeps(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 4})
	t0 := time.Now()
	refs := make([]gray.Ref[int], 4)
	for i := range refs {
		refs[i] = nap.Remote(1000)
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	// Four 1-second tasks on 4 CPUs run side by side: well under the 4 s
	// they would take one after another.
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("four 1 s tasks took %v with 4 CPUs; they did not run in parallel", d)
	}
}
