package driver_test

import (
	"context"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/state"
)

// A Snapshot counts the pool workers still starting: it reaches zero once
// every one of them has connected (what `gray microbenchmark` waits for
// before it measures), with the whole pool listed then.
func TestSnapshotCountsStartingWorkers(t *testing.T) {
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 1, NumWorkers: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
	s, err := gray.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if pool := poolWorkers(s); s.Starting > pool || pool != 3 {
		t.Fatalf("just after Init: %d starting of %d pool workers listed, want at most all 3 of 3", s.Starting, pool)
	}
	waitSnapshot(t, "every pool worker to connect", func(s state.Snapshot) bool { return s.Starting == 0 })
	s, _ = gray.Snapshot()
	if pool := poolWorkers(s); pool != 3 {
		t.Fatalf("%d pool workers listed once none is starting, want 3", pool)
	}
}

func poolWorkers(s state.Snapshot) int {
	n := 0
	for _, w := range s.Workers {
		if w.Actor == "" {
			n++
		}
	}
	return n
}
