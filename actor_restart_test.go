package gray_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gray-ml/gray"
)

// Tally is an actor whose calls leave a trace in a file (one line per
// run), so a test can count how often each ran, restarts included.
type Tally struct {
	trace string
	sum   int
}

func (t *Tally) note(what string) error {
	f, err := os.OpenFile(t.trace, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, what)
	return err
}

func newTally(ctx context.Context, trace string) (*Tally, error) {
	t := &Tally{trace: trace}
	return t, t.note("new")
}

func tallyAdd(t *Tally, ctx context.Context, k int) (int, error) {
	t.sum += k
	return t.sum, t.note(fmt.Sprint("add ", k))
}

func tallyPID(t *Tally, ctx context.Context) (int, error) { return os.Getpid(), nil }

// CkTally is a Tally that checkpoints its sum.
type CkTally struct{ Tally }

// Checkpoint implements gray.Checkpointer.
func (t *CkTally) Checkpoint(ctx context.Context) ([]byte, error) {
	return binary.AppendVarint(nil, int64(t.sum)), t.note(fmt.Sprint("checkpoint ", t.sum))
}

// Restore implements gray.Checkpointer.
func (t *CkTally) Restore(ctx context.Context, data []byte) error {
	v, k := binary.Varint(data)
	if k <= 0 {
		return errors.New("bad checkpoint")
	}
	t.sum = int(v)
	return t.note(fmt.Sprint("restore ", v))
}

var (
	_         gray.Checkpointer = (*CkTally)(nil)
	tallyType                   = gray.Actor1("test.Tally", newTally, gray.MaxRestarts(1))
	tallyAddM                   = gray.Method1(tallyType, "add", tallyAdd)
	tallyPIDM                   = gray.Method0(tallyType, "pid", tallyPID)
	tallyExit                   = gray.Method0(tallyType, "exit", func(t *Tally, ctx context.Context) (int, error) {
		os.Exit(3)
		return 0, nil
	})

	ckTallyType = gray.Actor1("test.CkTally", func(ctx context.Context, trace string) (*CkTally, error) {
		t, err := newTally(ctx, trace)
		return &CkTally{Tally: *t}, err
	}, gray.MaxRestarts(-1), gray.CheckpointInterval(3))
	ckTallyAdd = gray.Method1(ckTallyType, "add", func(t *CkTally, ctx context.Context, k int) (int, error) { return tallyAdd(&t.Tally, ctx, k) })
	ckTallyPID = gray.Method0(ckTallyType, "pid", func(t *CkTally, ctx context.Context) (int, error) { return tallyPID(&t.Tally, ctx) })

	// noCkType asks for checkpoints but cannot give them.
	noCkType = gray.Actor1("test.NoCk", newTally, gray.MaxRestarts(1), gray.CheckpointInterval(2))
	noCkPID  = gray.Method0(noCkType, "pid", tallyPID)
)

// traceLines counts the lines of the trace file that start with prefix.
func traceLines(t *testing.T, trace, prefix string) int {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func kill9(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
}

// An actor whose process is killed mid-sequence is recreated and its calls
// replayed in order: callers see the sums they would have seen, the calls
// sent before the death but not finished come back right, and each call's
// result is stored once.
func TestKilledActorIsRestartedWithItsStateReplayed(t *testing.T) {
	ctx := start(t, gray.Options{})
	trace := filepath.Join(t.TempDir(), "trace")
	h, err := tallyType.Remote(ctx, trace)
	if err != nil {
		t.Fatal(err)
	}
	var first gray.Ref[int]
	for k := 1; k <= 5; k++ {
		r := tallyAddM.Remote(h, k)
		if k == 1 {
			first = r
		}
		if v, err := gray.Get(ctx, r); err != nil || v != k*(k+1)/2 {
			t.Fatalf("add %d = %d, %v; want %d", k, v, err, k*(k+1)/2)
		}
	}
	if err := gray.Free(ctx, first); err != nil {
		t.Fatal(err)
	}
	pid, err := gray.Get(ctx, tallyPIDM.Remote(h))
	if err != nil {
		t.Fatal(err)
	}
	kill9(t, pid)
	// Calls made right after the kill, some perhaps sent to the dead
	// process before its death is noticed.
	var refs []gray.Ref[int]
	for k := 6; k <= 8; k++ {
		refs = append(refs, tallyAddM.Remote(h, k))
	}
	for i, r := range refs {
		k := 6 + i
		if v, err := gray.Get(ctx, r); err != nil || v != k*(k+1)/2 {
			t.Fatalf("add %d after the kill = %d, %v; want %d", k, v, err, k*(k+1)/2)
		}
	}
	pid2, err := gray.Get(ctx, tallyPIDM.Remote(h))
	if err != nil || pid2 == pid {
		t.Fatalf("pid after the restart: %d, %v; want a new process (was %d)", pid2, err, pid)
	}
	// add 1 was replayed, but its result, freed before the kill, is not
	// stored again.
	if _, err := gray.Get(ctx, first); !errors.Is(err, gray.ErrFreed) {
		t.Errorf("Get of a result freed before the restart: %v; want ErrFreed (a replay stores no result)", err)
	}
	if n := traceLines(t, trace, "new"); n != 2 {
		t.Errorf("the constructor ran %d times, want 2 (once more for the restart)", n)
	}
	// 5 calls before the kill, replayed once, and 3 after it.
	if n := traceLines(t, trace, "add"); n != 5+5+3 {
		t.Errorf("add ran %d times, want 13 (5, 5 replayed, 3 new)", n)
	}
}

// With CheckpointInterval(3), a restart restores the last checkpoint and
// replays only the calls made after it.
func TestRestartedActorReplaysOnlyCallsAfterItsCheckpoint(t *testing.T) {
	ctx := start(t, gray.Options{})
	trace := filepath.Join(t.TempDir(), "trace")
	h, err := ckTallyType.Remote(ctx, trace)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 7; k++ { // checkpoints after calls 3 and 6
		if v, err := gray.Get(ctx, ckTallyAdd.Remote(h, k)); err != nil || v != k*(k+1)/2 {
			t.Fatalf("add %d = %d, %v", k, v, err)
		}
	}
	pid, err := gray.Get(ctx, ckTallyPID.Remote(h)) // call 8: no checkpoint
	if err != nil {
		t.Fatal(err)
	}
	kill9(t, pid)
	if v, err := gray.Get(ctx, ckTallyAdd.Remote(h, 8)); err != nil || v != 36 {
		t.Fatalf("add 8 after the kill = %d, %v; want 36", v, err)
	}
	if n := traceLines(t, trace, "restore 21"); n != 1 {
		t.Errorf("restored the checkpoint after call 6 (sum 21) %d times, want 1", n)
	}
	// 7 calls, call 7 replayed after the checkpoint, then add 8.
	if n := traceLines(t, trace, "add"); n != 7+1+1 {
		t.Errorf("add ran %d times, want 9: only the call after the checkpoint is replayed", n)
	}
	// Restarts are unlimited: a second kill is survived as well.
	pid2, err := gray.Get(ctx, ckTallyPID.Remote(h))
	if err != nil || pid2 == pid {
		t.Fatalf("pid after the restart: %d, %v", pid2, err)
	}
	kill9(t, pid2)
	if v, err := gray.Get(ctx, ckTallyAdd.Remote(h, 9)); err != nil || v != 45 {
		t.Fatalf("add 9 after a second kill = %d, %v; want 45", v, err)
	}
}

// Restarts are counted: once MaxRestarts are used up, the actor is dead
// and its calls say so (ErrActorDead, ErrWorkerDied, how many restarts).
// Kill ends an actor for good, restarts or not.
func TestActorRestartsRunOutAndKillIsFinal(t *testing.T) {
	ctx := start(t, gray.Options{})
	trace := filepath.Join(t.TempDir(), "trace")
	h, err := tallyType.Remote(ctx, trace) // MaxRestarts(1)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		pid, err := gray.Get(ctx, tallyPIDM.Remote(h))
		if err != nil {
			t.Fatal(err)
		}
		kill9(t, pid)
	}
	_, err = gray.Get(ctx, tallyAddM.Remote(h, 1))
	if !errors.Is(err, gray.ErrActorDead) || !errors.Is(err, gray.ErrWorkerDied) || !strings.Contains(err.Error(), "restarted once") {
		t.Fatalf("a call after the restarts ran out: %v; want ErrActorDead saying it was restarted once", err)
	}

	// A call that kills its process each time it runs is replayed once
	// (MaxRestarts(1)), then fails: restarts end, they do not loop.
	// Counted before the creation: Remote returns before the constructor
	// runs, which on a started pool worker is at once.
	newBefore := traceLines(t, trace, "new")
	c, err := tallyType.Remote(ctx, trace)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, tallyExit.Remote(c))
	if !errors.Is(err, gray.ErrActorDead) || !strings.Contains(err.Error(), "restarted once") {
		t.Fatalf("a call that always kills its process: %v; want ErrActorDead after one restart", err)
	}
	if n := traceLines(t, trace, "new") - newBefore; n != 2 {
		t.Errorf("the constructor ran %d times, want 2 (once, and once for the restart)", n)
	}

	k, err := tallyType.Remote(ctx, trace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, tallyAddM.Remote(k, 1)); err != nil {
		t.Fatal(err)
	}
	before := traceLines(t, trace, "new")
	if err := gray.Kill(k); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, tallyAddM.Remote(k, 1)); !errors.Is(err, gray.ErrActorDead) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("a call after Kill: %v; want ErrActorDead saying it was killed", err)
	}
	if n := traceLines(t, trace, "new"); n != before {
		t.Errorf("the constructor ran %d more times after Kill, want none", n-before)
	}
}

// A type that asks for checkpoints but does not implement Checkpointer
// fails to construct, saying what is missing.
func TestCheckpointIntervalNeedsCheckpointer(t *testing.T) {
	ctx := start(t, gray.Options{})
	h, err := noCkType.Remote(ctx, filepath.Join(t.TempDir(), "trace"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, noCkPID.Remote(h))
	if !errors.Is(err, gray.ErrActorDead) || !strings.Contains(err.Error(), "does not implement gray.Checkpointer") {
		t.Fatalf("call to an actor whose type cannot checkpoint: %v; want its constructor's error naming gray.Checkpointer", err)
	}
}

// BenchmarkActorCallReplayLog measures a synchronous actor call without
// restarts (no log), with MaxRestarts (every call logged for good) and with
// a checkpoint every 3 calls (the log trimmed), and the time from a
// kill -9 to the first result of the restarted actor after 100 logged
// calls, beside the creation of an actor and its first call.
func BenchmarkActorCallReplayLog(b *testing.B) {
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		b.Fatal(err)
	}
	defer gray.Shutdown()
	trace := filepath.Join(b.TempDir(), "trace")
	plain, err := counterType.Remote(ctx)
	if err != nil {
		b.Fatal(err)
	}
	logged, err := tallyType.Remote(ctx, os.DevNull)
	if err != nil {
		b.Fatal(err)
	}
	ck, err := ckTallyType.Remote(ctx, os.DevNull)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			if _, err := gray.Get(ctx, addTo.Remote(plain, 1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restartable", func(b *testing.B) {
		for range b.N {
			if _, err := gray.Get(ctx, tallyAddM.Remote(logged, 1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checkpoint3", func(b *testing.B) {
		for range b.N {
			if _, err := gray.Get(ctx, ckTallyAdd.Remote(ck, 1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("create", func(b *testing.B) { // the peer of restart100: a new actor's first call
		for range b.N {
			h, err := tallyType.Remote(ctx, trace)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := gray.Get(ctx, tallyPIDM.Remote(h)); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_ = gray.Kill(h)
			b.StartTimer()
		}
	})
	b.Run("restart100", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			h, err := tallyType.Remote(ctx, trace)
			if err != nil {
				b.Fatal(err)
			}
			for range 99 {
				tallyAddM.Remote(h, 1)
			}
			pid, err := gray.Get(ctx, tallyPIDM.Remote(h))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if v, err := gray.Get(ctx, tallyAddM.Remote(h, 1)); err != nil || v != 100 {
				b.Fatalf("after the restart: %d, %v", v, err)
			}
			b.StopTimer()
			_ = gray.Kill(h)
		}
	})
}
