package driver_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/objstore"
)

// sharedHolder is an actor that keeps a large array zero-copy.
type sharedHolder struct{ x gray.Shared[[]float64] }

// holderReport is what a sharedHolder says about its array.
type holderReport struct {
	Mapped  bool   // the array's data lies in a mapping of the store's folder
	File    string // the mapped file
	Sum     float64
	AnonKB  int64 // private resident memory (a copy would land here)
	ShmemKB int64 // resident shared memory
}

var (
	holderType = gray.Actor1("shared.Holder", func(ctx context.Context, x gray.Shared[[]float64]) (*sharedHolder, error) {
		return &sharedHolder{x: x}, nil
	})
	holderReportM = gray.Method0(holderType, "report", func(h *sharedHolder, ctx context.Context) (holderReport, error) {
		x := h.x.Value()
		rep := holderReport{}
		for _, v := range x {
			rep.Sum += v
		}
		if len(x) > 0 {
			rep.File = mappedFile(unsafe.Pointer(unsafe.SliceData(x)))
			rep.Mapped = strings.HasPrefix(rep.File, os.Getenv("GRAY_STORE_DIR")+"/")
		}
		rep.AnonKB, rep.ShmemKB = statusKB("RssAnon:"), statusKB("RssShmem:")
		return rep, nil
	})
	holderRelease = gray.Method0(holderType, "release", func(h *sharedHolder, ctx context.Context) (int, error) {
		return 0, h.x.Release()
	})
	holderWrite = gray.Method0(holderType, "write", func(h *sharedHolder, ctx context.Context) (int, error) {
		h.x.Value()[0] = 1 // read-only: must fail loudly
		return 0, nil
	})
	// sharedSum takes a Shared in a remote function: valid during the call.
	sharedSum = gray.Func1("shared.sum", func(ctx context.Context, x gray.Shared[[]float64]) (float64, error) {
		s := 0.0
		for _, v := range x.Value() {
			s += v
		}
		return s, nil
	})

	// optsActor reserves nothing when registered; RemoteWith gives it more.
	optsActor = gray.Actor0("shared.Opts", func(ctx context.Context) (*sharedHolder, error) { return &sharedHolder{}, nil })
	optsPing  = gray.Method0(optsActor, "ping", func(h *sharedHolder, ctx context.Context) (int, error) { return 1, nil })
)

// mappedFile names the file mapped at p, by /proc/self/maps ("" if none).
func mappedFile(p unsafe.Pointer) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	a := uint64(uintptr(p))
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) < 6 {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		if a >= l && a < h {
			return fs[5]
		}
	}
	return ""
}

func statusKB(key string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

// ramp returns n values 0..999 repeated, and their sum.
func ramp(n int) ([]float64, float64) {
	x := make([]float64, n)
	s := 0.0
	for i := range x {
		x[i] = float64(i % 1000)
		s += x[i]
	}
	return x, s
}

// Three actors keep one 50 MB array: each reads it in place from the same
// store file, none holds a private copy, the object survives the driver
// dropping its reference and a churn of other objects that evicts what it
// can, and it is freed once the last holder is killed.
func TestSharedActorsKeepOneCopy(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc/self/maps: cannot see where data lives")
	}
	n := startStore(t, 160<<20, 3)
	ctx := context.Background()
	x, want := ramp(50 << 20 / 8)
	r, err := gray.Put(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	x = nil
	hs := make([]gray.Handle[sharedHolder], 3)
	for i := range hs {
		if hs[i], err = holderType.Remote(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	r = gray.Ref[[]float64]{} // only the actors hold the array now
	report := func() []holderReport {
		t.Helper()
		refs := make([]gray.Ref[holderReport], len(hs))
		for i, h := range hs {
			refs[i] = holderReportM.Remote(h)
		}
		reps, err := gray.GetAll(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		return reps
	}
	reps := report()
	for i, rep := range reps {
		if !rep.Mapped || rep.Sum != want {
			t.Errorf("actor %d: array in the store's mapping %v (%q), sum %g (want true, %g)", i, rep.Mapped, rep.File, rep.Sum, want)
		}
		if rep.File != reps[0].File {
			t.Errorf("actor %d reads %q, actor 0 reads %q: want one file for all", i, rep.File, reps[0].File)
		}
		// A private copy would put 50 MB in anonymous memory.
		if rep.AnonKB > 45<<10 {
			t.Errorf("actor %d: %d KiB of private resident memory: the 50 MB array seems copied", i, rep.AnonKB)
		}
		t.Logf("actor %d: RssAnon %d KiB, RssShmem %d KiB", i, rep.AnonKB, rep.ShmemKB)
	}
	// Churn: 30 MB objects put and dropped in a 160 MB store evict
	// whatever is not pinned.
	for range 8 {
		y, _ := ramp(30 << 20 / 8)
		if _, err := gray.Put(ctx, y); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	for i, rep := range report() {
		if rep.Sum != want {
			t.Errorf("after churn, actor %d sums %g, want %g", i, rep.Sum, want)
		}
	}
	settleStore(t, n, 1) // the array, held by the actors
	if st := n.SharedStats(); st.Objects != 1 || st.PinnedBytes < 50<<20 {
		t.Fatalf("store holds %d objects, %d bytes pinned: want the held array, pinned", st.Objects, st.PinnedBytes)
	}
	if _, err := os.Stat(reps[0].File); err != nil {
		t.Fatalf("the held array's file: %v", err)
	}
	// Releasing in one actor and killing the others frees it.
	if _, err := gray.Get(ctx, holderRelease.Remote(hs[0])); err != nil {
		t.Fatal(err)
	}
	if k := n.KeptBy(hs[0].ID()); k != 0 {
		t.Errorf("actor 0 still holds %d objects after Release", k)
	}
	if err := gray.Kill(hs[1]); err != nil {
		t.Fatal(err)
	}
	if rep, err := gray.Get(ctx, holderReportM.Remote(hs[2])); err != nil || rep.Sum != want {
		t.Errorf("after one holder released and one died, the last reads sum %g (%v), want %g", rep.Sum, err, want)
	}
	if err := gray.Kill(hs[2]); err != nil {
		t.Fatal(err)
	}
	settleStore(t, n, 0)
	if _, err := os.Stat(reps[0].File); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after its holders ended, the array's file: %v, want it gone", err)
	}
	_, err = gray.Get(ctx, holderReportM.Remote(hs[0]))
	if err == nil || !strings.Contains(err.Error(), "after Release") {
		t.Errorf("Value after Release: %v, want an error naming Release", err)
	}
}

// A write to a kept array fails the call; the array is unchanged.
func TestSharedWriteFailsLoudly(t *testing.T) {
	startStore(t, 64<<20, 2)
	ctx := context.Background()
	x, want := ramp(1 << 17) // 1 MB: in shared memory
	h, err := holderType.Remote(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, holderWrite.Remote(h))
	if !errors.Is(err, objstore.ErrReadOnly) && (err == nil || !strings.Contains(err.Error(), "read-only")) {
		t.Errorf("write to a Shared array: %v, want an error wrapping objstore.ErrReadOnly", err)
	}
	rep, err := gray.Get(ctx, holderReportM.Remote(h))
	if err != nil {
		// The worker may have died of the fault; that is loud too, but the
		// object must still be intact for others.
		t.Logf("report after the write: %v", err)
	} else if rep.Sum != want {
		t.Errorf("after a refused write the array sums %g, want %g", rep.Sum, want)
	}
	_ = gray.Kill(h)
}

// Shared works for small values (inline: a private copy), in remote
// functions, in local mode, and refuses to be encoded.
func TestSharedOtherPaths(t *testing.T) {
	ctx := context.Background()
	for _, local := range []bool{false, true} {
		if err := gray.Init(ctx, gray.Options{NumCPUs: 2, LocalMode: local, ObjectStoreMemory: 64 << 20}); err != nil {
			t.Fatal(err)
		}
		small, sWant := ramp(10)
		big, bWant := ramp(1 << 17)
		for _, c := range []struct {
			x    []float64
			want float64
		}{{small, sWant}, {big, bWant}} {
			got, err := gray.Get(ctx, sharedSum.Remote(c.x))
			if err != nil || got != c.want {
				t.Errorf("local=%v: remote function on %d values: %g, %v (want %g)", local, len(c.x), got, err, c.want)
			}
			h, err := holderType.Remote(ctx, c.x)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := gray.Get(ctx, holderReportM.Remote(h))
			if err != nil || rep.Sum != c.want {
				t.Errorf("local=%v: actor on %d values: %g, %v (want %g)", local, len(c.x), rep.Sum, err, c.want)
			}
			_ = gray.Kill(h)
		}
		if _, err := gray.Put(ctx, gray.SharedValue(small)); err == nil || !strings.Contains(err.Error(), "parameter") {
			t.Errorf("local=%v: Put of a Shared: %v, want an error saying it is a parameter type", local, err)
		}
		if err := gray.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	s := gray.SharedValue([]float64{1, 2})
	if s.Value()[1] != 2 || s.Release() != nil || s.Release() != nil {
		t.Error("SharedValue: value or double Release wrong")
	}
}

// RemoteWith reserves the given resources for the actor's lifetime,
// releases them when it ends, and rejects impossible requests clearly.
func TestRemoteWithActorOptions(t *testing.T) {
	startStore(t, 16<<20, 2)
	ctx := context.Background()
	h, err := optsActor.RemoteWith(ctx, gray.ActorOptions{CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, optsPing.Remote(h)); err != nil {
		t.Fatal(err)
	}
	if got := gray.AvailableResources()["CPU"]; got != 0 {
		t.Errorf("with an actor holding CPUs=2 of 2, %g CPUs are free", got)
	}
	// The registered type reserves nothing, so plain Remote still fits.
	h2, err := optsActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, optsPing.Remote(h2)); err != nil {
		t.Fatal(err)
	}
	_ = gray.Kill(h)
	_ = gray.Kill(h2)
	deadline := time.Now().Add(10 * time.Second)
	for gray.AvailableResources()["CPU"] != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after Kill, %g CPUs free, want 2", gray.AvailableResources()["CPU"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		opts gray.ActorOptions
		want string
	}{
		{gray.ActorOptions{CPUs: 3}, "CPU=3 but this node has CPU=2 in all"},
		{gray.ActorOptions{GPUs: 1}, "GPU=1 but this node has GPU=0"},
		{gray.ActorOptions{Resources: map[string]float64{"disk": 1}}, "disk=1 but this node has disk=0"},
		{gray.ActorOptions{CPUs: -1}, "must not be negative"},
		{gray.ActorOptions{Resources: map[string]float64{"": 1}}, "names must be non-empty"},
	} {
		_, err := optsActor.RemoteWith(ctx, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RemoteWith(%+v): %v, want an error containing %q", c.opts, err, c.want)
		}
	}
}

var (
	// plainHolderType takes its array as an ordinary argument: it needs it
	// only while its constructor runs.
	plainHolderType = gray.Actor1("shared.PlainHolder", func(ctx context.Context, x []float64) (*sharedHolder, error) {
		return &sharedHolder{}, nil
	})
	plainPing = gray.Method0(plainHolderType, "ping", func(h *sharedHolder, ctx context.Context) (int, error) { return 1, nil })
)

// TestActorArgumentFreedAfterConstruction: an ordinary (not Shared)
// argument of an actor's constructor, passed by reference or as a large
// value, is freed once the constructor ran and the driver dropped it, while
// the actor lives on.
func TestActorArgumentFreedAfterConstruction(t *testing.T) {
	startStore(t, 64<<20, 2)
	ctx := context.Background()
	for _, byRef := range []bool{true, false} {
		x, _ := ramp(1 << 20 / 8)
		var arg any = x
		if byRef {
			r, err := gray.Put(ctx, x)
			if err != nil {
				t.Fatal(err)
			}
			arg = r
		}
		h, err := plainHolderType.Remote(ctx, arg)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := gray.Get(ctx, plainPing.Remote(h)); err != nil || v != 1 {
			t.Fatalf("byRef=%v: ping: %v, %v", byRef, v, err)
		}
		x, arg = nil, nil
		if n := settle(t, 0); n != 0 {
			t.Fatalf("byRef=%v: %d objects remain after the constructor ran and the driver dropped its argument", byRef, n)
		}
		if v, err := gray.Get(ctx, plainPing.Remote(h)); err != nil || v != 1 {
			t.Fatalf("byRef=%v: ping after the argument was freed: %v, %v", byRef, v, err)
		}
	}
}

var (
	// nestedHolderType's constructor gets a reference inside a struct.
	nestedHolderType = gray.Actor1("shared.NestedHolder", func(ctx context.Context, h holder) (*sharedHolder, error) {
		return &sharedHolder{}, nil
	})
	nestedPing = gray.Method0(nestedHolderType, "ping", func(h *sharedHolder, ctx context.Context) (int, error) { return 1, nil })
)

// TestActorNestedArgumentFreedAfterConstruction: a reference inside an
// actor constructor's argument is freed once the driver dropped it, and
// the constructor, which never kept it, has run.
func TestActorNestedArgumentFreedAfterConstruction(t *testing.T) {
	startStore(t, 64<<20, 2)
	ctx := context.Background()
	x, _ := ramp(1 << 20 / 8)
	r, err := gray.Put(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	h, err := nestedHolderType.Remote(ctx, holder{R: r})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gray.Get(ctx, nestedPing.Remote(h)); err != nil || v != 1 {
		t.Fatalf("ping: %v, %v", v, err)
	}
	r = gray.Ref[[]float64]{}
	if n := settle(t, 0); n != 0 {
		t.Fatalf("%d objects remain after the constructor ran and the driver dropped the reference inside its argument", n)
	}
}
