package driver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/node"
	"github.com/gray-ml/gray/runtime/recovery"
)

// Lost objects name their reason, in the driver and across processes.

type lostMaker struct{}

var (
	lostMakerType = gray.Actor0("lost.Maker", func(ctx context.Context) (*lostMaker, error) { return &lostMaker{}, nil })
	lostMake      = gray.Method0(lostMakerType, "make", func(m *lostMaker, ctx context.Context) ([]uint8, error) {
		return make([]uint8, 300<<10), nil // in shared memory
	})
	// lostOnce makes a large result the first time and kills its worker
	// every time it is re-run (a marker file tells).
	lostOnce = gray.Func1("lost.once", func(ctx context.Context, marker string) ([]uint8, error) {
		if _, err := os.Stat(marker); err == nil {
			f, _ := os.OpenFile(marker, os.O_APPEND|os.O_WRONLY, 0o644)
			_, _ = f.WriteString("x")
			f.Close()
			os.Exit(1)
		}
		return make([]uint8, 300<<10), os.WriteFile(marker, nil, 0o644)
	})
	// lostDeref gets the object its argument refers to, in a worker.
	lostDeref = gray.Func1("lost.deref", func(ctx context.Context, refs []gray.Ref[[]uint8]) (int, error) {
		v, err := gray.Get(ctx, refs[0])
		return len(v), err
	})
)

// evictAll fills the 1 MiB store of startStore with objects it keeps, so
// that every object not pinned is evicted; it returns them to keep alive.
func evictAll(t *testing.T, n *node.Node) []gray.Ref[[]uint8] {
	t.Helper()
	before := n.SharedStats().Evictions
	var keep []gray.Ref[[]uint8]
	for range 4 {
		r, err := gray.Put(context.Background(), make([]uint8, 300<<10))
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, r)
	}
	if n.SharedStats().Evictions == before {
		t.Fatal("no eviction after putting 1.2 MiB into a 1 MiB store")
	}
	return keep
}

func TestEvictedActorResultIsLostAcrossProcesses(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	h, err := lostMakerType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := lostMake.Remote(h)
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{r}, 1, 0); err != nil {
		t.Fatal(err)
	}
	keep := evictAll(t, n)
	_, err = gray.Get(ctx, r)
	var lost *gray.ObjectLostError
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostActorMethod) || !errors.As(err, &lost) || lost.Object != r.ID() {
		t.Fatalf("Get of an evicted actor result: %v; want ErrObjectLost for the reason ErrLostActorMethod", err)
	}
	// A worker that Gets it fails with an error that keeps both identities.
	_, err = gray.Get(ctx, lostDeref.Remote([]gray.Ref[[]uint8]{r}))
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostActorMethod) || errors.Is(err, gray.ErrLostPut) {
		t.Fatalf("a task's Get of the lost object: %v; want ErrObjectLost and ErrLostActorMethod in the driver", err)
	}
	runtime.KeepAlive(keep)
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
}

// A rebuild whose task fails is retried on the next request, up to
// recovery.DefaultRebuilds failures in a row; then the object is lost for good.
func TestRebuildRetriesRunOut(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "marker")
	r := lostOnce.Remote(marker)
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{r}, 1, 0); err != nil {
		t.Fatal(err)
	}
	keep := evictAll(t, n)
	for i := 1; i < recovery.DefaultRebuilds; i++ {
		_, err := gray.Get(ctx, r)
		if !errors.Is(err, gray.ErrWorkerDied) || errors.Is(err, gray.ErrObjectLost) {
			t.Fatalf("failed rebuild %d: %v; want its failure (ErrWorkerDied), not a loss yet", i, err)
		}
	}
	_, err := gray.Get(ctx, r)
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostRetriesExhausted) || !errors.Is(err, gray.ErrWorkerDied) {
		t.Fatalf("rebuild %d: %v; want ErrObjectLost for the reason ErrLostRetriesExhausted, wrapping the last failure", recovery.DefaultRebuilds, err)
	}
	// Lost for good: no more re-runs.
	if _, err := gray.Get(ctx, r); !errors.Is(err, gray.ErrLostRetriesExhausted) {
		t.Fatalf("Get after the loss: %v", err)
	}
	b, err := os.ReadFile(marker)
	if err != nil || len(b) != recovery.DefaultRebuilds {
		t.Fatalf("the task was re-run %d times (%v), want %d", len(b), err, recovery.DefaultRebuilds)
	}
	logged := false
	for _, e := range gray.Errors() {
		logged = logged || errors.Is(e, gray.ErrLostRetriesExhausted)
	}
	if !logged {
		t.Error("the loss is not in the error log (gray.Errors)")
	}
	runtime.KeepAlive(keep)
}
