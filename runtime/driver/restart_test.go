package driver_test

import (
	"context"
	"encoding/binary"
	"os"
	"syscall"
	"testing"

	"github.com/gray-ml/gray"
)

// weightSum is an actor that keeps the sum of every array it was given,
// so replaying its calls needs their large arguments.
type weightSum struct{ sum float64 }

// Checkpoint implements Checkpointer.
func (w *weightSum) Checkpoint(ctx context.Context) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(nil, uint64(w.sum)), nil
}

// Restore implements Checkpointer.
func (w *weightSum) Restore(ctx context.Context, b []byte) error {
	w.sum = float64(binary.LittleEndian.Uint64(b))
	return nil
}

var (
	weightSumType = gray.Actor0("restart.WeightSum", func(ctx context.Context) (*weightSum, error) { return &weightSum{}, nil },
		gray.MaxRestarts(3), gray.CheckpointInterval(4))
	weightSumAdd = gray.Method1(weightSumType, "add", func(w *weightSum, ctx context.Context, x []float64) (float64, error) {
		for _, v := range x {
			w.sum += v
		}
		return w.sum, nil
	})
	weightSumPID = gray.Method0(weightSumType, "pid", func(w *weightSum, ctx context.Context) (int, error) { return os.Getpid(), nil })
)

// Calls whose arguments were large (in shared memory) or references are
// replayed with the same arguments after a kill; with checkpoints the log
// never holds more than the interval's calls, and once the actor ends
// nothing of its log is left in the object table.
func TestRestartReplaysLargeAndRefArguments(t *testing.T) {
	n := startStore(t, 64<<20, 2)
	ctx := context.Background()
	h, err := weightSumType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]float64, 1<<15) // 256 KiB: passed through shared memory
	for i := range big {
		big[i] = 1
	}
	want := 0.0
	var last gray.Ref[float64]
	for i := range 10 {
		if i%2 == 0 {
			last = weightSumAdd.Remote(h, big)
		} else {
			r, err := gray.Put(ctx, []float64{float64(i)})
			if err != nil {
				t.Fatal(err)
			}
			last = weightSumAdd.Remote(h, r)
			want += float64(i)
		}
		if i%2 == 0 {
			want += float64(len(big))
		}
		if restarts, logged := n.Restarts(h.ID()); restarts != 0 || logged > 4 {
			t.Fatalf("after call %d: %d restarts, %d calls logged; want at most the checkpoint interval (4)", i+1, restarts, logged)
		}
	}
	if v, err := gray.Get(ctx, last); err != nil || v != want {
		t.Fatalf("sum = %v, %v; want %v", v, err, want)
	}
	// Checkpoints followed calls 4 and 8 (each reaches the driver before
	// the next call's result): the log holds calls 9 (whose large
	// argument only the log keeps now) and 10.
	if _, logged := n.Restarts(h.ID()); logged != 2 {
		t.Fatalf("%d calls logged after 10 calls with a checkpoint every 4, want 2", logged)
	}
	pid, err := gray.Get(ctx, weightSumPID.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	one, err := gray.Put(ctx, []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, weightSumAdd.Remote(h, one)); err != nil || v != want+1 {
		t.Fatalf("sum after the kill = %v, %v; want %v", v, err, want+1)
	}
	if restarts, _ := n.Restarts(h.ID()); restarts != 1 {
		t.Fatalf("%d restarts, want 1", restarts)
	}
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
	if err := gray.Kill(h); err != nil {
		t.Fatal(err)
	}
	if err := n.Check(); err != nil {
		t.Fatalf("after Kill: %v", err)
	}
}
