package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/state"
)

type refHolder struct{ R gray.Ref[[]float64] }

var (
	// rcMake makes a large result once its gate opens, needing no CPU,
	// and logs each run.
	rcMake = gray.Func2("race.make", func(ctx context.Context, log string, g gate) ([]float64, error) {
		if err := g.wait(ctx); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, _ = f.WriteString("run\n")
		_ = f.Close()
		x := make([]float64, 20000)
		for i := range x {
			x[i] = 1
		}
		return x, nil
	}, gray.CPUs(0))
	rcParent = gray.Func1("race.parent", func(ctx context.Context, h refHolder) (float64, error) {
		x, err := gray.Get(ctx, h.R)
		if err != nil {
			return 0, err
		}
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s, nil
	})
	// rcBlock holds its CPU until its gate opens.
	rcBlock = gray.Func1("race.block", func(ctx context.Context, g gate) (int, error) {
		return 0, g.wait(ctx)
	})
)

// A task blocked in Get waits for its CPU after its object is ready; an
// eviction in that window must not reach the task as an error: the object
// is rebuilt from its lineage and the Get answered with it.
func TestEvictedBeforeWorkerReplyIsRebuilt(t *testing.T) {
	ctx := context.Background()
	// Three workers up front, so that the maker, the parent and the
	// blocker each start at once on one CPU.
	if err := gray.Init(ctx, gray.Options{NumCPUs: 1, NumWorkers: 3, ObjectStoreMemory: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
	n := theDriver(t).Node
	log := filepath.Join(t.TempDir(), "runs")
	made, unblock := newGate(t, "made"), newGate(t, "unblock")
	g := rcMake.Remote(log, made)
	p := rcParent.Remote(refHolder{R: g}) // blocks in Get, giving its CPU back
	waitSnapshot(t, "the parent to block in its Get", func(s state.Snapshot) bool {
		return taskIn(s, p) == state.TaskRunning && s.Available.CPU == 1 // running, its CPU lent out
	})
	b := rcBlock.Remote(unblock) // takes the CPU: the parent cannot resume when g is ready
	waitSnapshot(t, "the blocker to run", func(s state.Snapshot) bool { return taskIn(s, b) == state.TaskRunning })
	made.open(t)
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{g}, 1, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the store: g's result, the least recently used, is evicted.
	var keep []gray.Ref[[]float64]
	for range 6 {
		r, err := gray.Put(ctx, make([]float64, 20000))
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, r)
	}
	_, statErr := os.Stat(filepath.Join(n.SharedDir(), g.ID().String()))
	evicted := os.IsNotExist(statErr) // an evicted object's file is removed
	unblock.open(t)
	got, err := gray.Get(ctx, p)
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	if got != 20000 {
		t.Fatalf("parent summed %v, want 20000", got)
	}
	if _, err := gray.Get(ctx, b); err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile(log)
	t.Logf("evicted before the reply: %v; runs of the maker: %d", evicted, strings.Count(string(runs), "run"))
	// The gates hold the window open: g was evicted while the parent
	// waited for its CPU, and rebuilt once.
	if c := strings.Count(string(runs), "run"); !evicted || c != 2 {
		t.Errorf("evicted %v, %d runs of the maker; want the result evicted while the parent waited for its CPU, and made twice", evicted, c)
	}
	_ = keep
}
