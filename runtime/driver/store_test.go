package driver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/node"
	"github.com/gray-ml/gray/runtime/objstore"
)

// inMapping reports whether p lies in a mapping of a file under dir, by
// /proc/self/maps: the proof that a decoded slice was not copied.
func inMapping(p unsafe.Pointer, dir string) (bool, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false, err
	}
	defer f.Close()
	a := uint64(uintptr(p))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || !strings.HasPrefix(fs[5], dir) {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		if a >= l && a < h {
			return true, nil
		}
	}
	return false, sc.Err()
}

type zcReport struct {
	Mapped bool
	Sum    float64
	RSSKB  int64
}

func rssKB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

type allKinds struct {
	F32  []float32
	F64  []float64
	I32  []int32
	I64  []int64
	U8   []uint8
	Name string
	M    map[string][]float64
	N    []allKindsInner
	Any  any
	X    int
}

type allKindsInner struct{ V []int64 }

func sampleKinds(n int) allKinds {
	k := allKinds{Name: "kinds", M: map[string][]float64{"a": {1, 2}, "b": make([]float64, n)}, X: 7,
		N: []allKindsInner{{V: []int64{1, 2, 3}}, {}}, Any: "any"}
	for i := range n {
		k.F32 = append(k.F32, float32(i))
		k.F64 = append(k.F64, float64(i)/2)
		k.I32 = append(k.I32, int32(-i))
		k.I64 = append(k.I64, int64(i)<<33)
		k.U8 = append(k.U8, uint8(i))
		k.M["b"][i] = float64(i)
	}
	return k
}

var (
	stProbe = gray.Func1("store.probe", func(ctx context.Context, x []float64) (zcReport, error) {
		m, err := inMapping(unsafe.Pointer(unsafe.SliceData(x)), os.Getenv("GRAY_STORE_DIR"))
		s := 0.0
		for _, v := range x {
			s += v
		}
		return zcReport{Mapped: m, Sum: s, RSSKB: rssKB()}, err
	})
	stMake = gray.Func1("store.make", func(ctx context.Context, seed int) ([]float64, error) {
		x := make([]float64, 20000)
		for i := range x {
			x[i] = float64(seed + i)
		}
		return x, nil
	})
	stDouble = gray.Func1("store.double", func(ctx context.Context, x []float64) ([]float64, error) {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = 2 * v
		}
		return y, nil
	})
	stWrite = gray.Func1("store.write", func(ctx context.Context, x []float64) (int, error) {
		x[0] = 42 // a read-only shared slice: must fail loudly
		return 0, nil
	})
	stEcho = gray.Func1("store.echo", func(ctx context.Context, k allKinds) (allKinds, error) { return k, nil })
	stBig  = gray.Func1("store.big", func(ctx context.Context, n int) ([]uint8, error) { return make([]uint8, n), nil })
	stPuts = gray.Func1("store.puts", func(ctx context.Context, n int) (int, error) {
		for range n {
			if _, err := gray.Put(ctx, make([]float64, 1<<17)); err != nil {
				return 0, err
			}
		}
		runtime.GC() // run the dropped references' cleanups now
		return n, nil
	})
)

func startStore(t *testing.T, capacity int64, cpus int) *node.Node {
	t.Helper()
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: cpus, ObjectStoreMemory: capacity}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
	return theDriver(t).Node
}

// A 100 MB array put once is read by four workers at once, each seeing the
// store's mapping (no copy), and by the driver likewise.
func TestZeroCopyHundredMBFourWorkers(t *testing.T) {
	n := startStore(t, 512<<20, 4)
	ctx := context.Background()
	x := make([]float64, 100<<20/8)
	want := 0.0
	for i := range x {
		x[i] = float64(i % 1000)
		want += x[i]
	}
	r, err := gray.Put(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	x = nil
	refs := make([]gray.Ref[zcReport], 4)
	for i := range refs {
		refs[i] = stProbe.Remote(r)
	}
	reps, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, rep := range reps {
		if !rep.Mapped || rep.Sum != want {
			t.Errorf("worker %d: data in the store's mapping %v, sum %g (want true, %g)", i, rep.Mapped, rep.Sum, want)
		}
		// A copy would add 100 MB of resident memory to the worker.
		if rep.RSSKB > 100<<10+60<<10 {
			t.Errorf("worker %d: resident memory %d KiB, more than a mapped 100 MB array plus 60 MB", i, rep.RSSKB)
		}
	}
	y, err := gray.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := inMapping(unsafe.Pointer(unsafe.SliceData(y)), n.SharedDir()); !ok || err != nil {
		t.Errorf("driver's Get: slice in the store's mapping = %v (%v), want true", ok, err)
	}
	if st := n.SharedStats(); st.Objects != 1 {
		t.Errorf("store holds %d objects, want 1 (the array, once)", st.Objects)
	}
}

func TestCodecKindsThroughStore(t *testing.T) {
	startStore(t, 256<<20, 2)
	ctx := context.Background()
	for _, n := range []int{3, 40000} { // inline, and shared memory
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want := sampleKinds(n)
			r, err := gray.Put(ctx, want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gray.Get(ctx, r)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Put/Get: %v, equal %v", err, reflect.DeepEqual(got, want))
			}
			for name, arg := range map[string]any{"value": want, "ref": r} {
				var out gray.Ref[allKinds]
				if name == "ref" {
					out = stEcho.Remote(r)
				} else {
					out = stEcho.Remote(arg)
				}
				got, err := gray.Get(ctx, out)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("task argument by %s and result: %v, equal %v", name, err, reflect.DeepEqual(got, want))
				}
			}
		})
	}
}

func TestReadOnlyWriteInTaskIsAnError(t *testing.T) {
	startStore(t, 64<<20, 2)
	ctx := context.Background()
	r, err := gray.Put(ctx, make([]float64, 50000))
	if err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, stWrite.Remote(r))
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("writing a shared slice in a task: err = %v, want an error about read-only slices", err)
	}
	// The object did not change.
	x, err := gray.Get(ctx, r)
	if err != nil || x[0] != 0 {
		t.Fatalf("after the failed write: x[0] = %v, err %v", x[0], err)
	}
}

func TestTooLargeAndEvictedPutErrors(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	if _, err := gray.Put(ctx, make([]uint8, 2<<20)); !errors.Is(err, objstore.ErrTooLarge) {
		t.Fatalf("Put of 2 MiB into a 1 MiB store: err = %v, want ErrTooLarge", err)
	}
	if _, err := gray.Get(ctx, stBig.Remote(2<<20)); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Fatalf("task result of 2 MiB into a 1 MiB store: err = %v, want an error naming the capacity", err)
	}
	first, err := gray.Put(ctx, make([]uint8, 300<<10))
	if err != nil {
		t.Fatal(err)
	}
	var keep []gray.Ref[[]uint8]
	for range 6 {
		r, err := gray.Put(ctx, make([]uint8, 300<<10))
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, r)
	}
	if n.SharedStats().Evictions == 0 {
		t.Fatal("no eviction after putting 2.1 MiB into a 1 MiB store")
	}
	_, err = gray.Get(ctx, first)
	var lost *gray.ObjectLostError
	if !errors.Is(err, gray.ErrObjectLost) || !errors.Is(err, gray.ErrLostPut) || !errors.Is(err, objstore.ErrEvicted) ||
		!errors.As(err, &lost) || lost.Object != first.ID() || !strings.Contains(err.Error(), "made by Put") {
		t.Fatalf("Get of an evicted Put: err = %v, want ErrObjectLost for the reason ErrLostPut, naming the object", err)
	}
	if errors.Is(err, gray.ErrLostActorMethod) || errors.Is(err, gray.ErrLostRetriesExhausted) {
		t.Fatalf("Get of an evicted Put: %v matches a reason it does not have", err)
	}
	runtime.KeepAlive(keep)
}

func TestLineageRebuildsEvictedResultsRecursively(t *testing.T) {
	n := startStore(t, 1<<20, 2)
	ctx := context.Background()
	a := stMake.Remote(5)   // 160 KB, in shared memory
	b := stDouble.Remote(a) // depends on a
	if _, _, err := gray.Wait(ctx, []gray.AnyRef{b}, 1, 0); err != nil {
		t.Fatal(err)
	}
	var keep []gray.Ref[[]uint8]
	for range 8 { // 2.4 MiB through a 1 MiB store: a and b are evicted
		r, err := gray.Put(ctx, make([]uint8, 300<<10))
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, r)
	}
	if n.SharedStats().Evictions < 2 {
		t.Fatalf("%d evictions, want a and b evicted", n.SharedStats().Evictions)
	}
	y, err := gray.Get(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(y) != 20000 || y[0] != 10 || y[19999] != 2*(5+19999) {
		t.Fatalf("rebuilt result: len %d, y[0] %v, y[last] %v", len(y), y[0], y[len(y)-1])
	}
	x, err := gray.Get(ctx, a)
	if err != nil || x[1] != 6 {
		t.Fatalf("rebuilt argument: %v, %v", x[1], err)
	}
	runtime.KeepAlive(keep)
}

// A value got in the driver pins its object: eviction takes others.
func TestGetPinsAgainstEviction(t *testing.T) {
	startStore(t, 1<<20, 2)
	ctx := context.Background()
	want := make([]float64, 40000) // 320 KB
	for i := range want {
		want[i] = float64(i)
	}
	r, err := gray.Put(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gray.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := gray.Put(ctx, make([]uint8, 300<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("a value got in the driver changed after other objects were put")
	}
	if _, err := gray.Get(ctx, r); err != nil {
		t.Fatalf("the pinned object was evicted: %v", err)
	}
}

func dirBytes(t *testing.T, dir string) int64 {
	var total int64
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if fi, err := e.Info(); err == nil {
			total += fi.Size()
		}
	}
	return total
}

// Putting and dropping 1 MB objects runs in flat memory, in the driver and
// in workers; task results are freed too.
func TestPutAndDropFlat(t *testing.T) {
	n := startStore(t, 256<<20, 2)
	ctx := context.Background()
	rss0 := rssKB()
	for i := range 400 {
		if _, err := gray.Put(ctx, make([]float64, 1<<17)); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			runtime.GC()
		}
	}
	settleStore(t, n, 0)
	if d := dirBytes(t, n.SharedDir()); d > 64<<20 {
		t.Errorf("/dev/shm holds %d bytes after putting and dropping 400 MB", d)
	}
	if grow := rssKB() - rss0; grow > 100<<10 {
		t.Errorf("driver's resident memory grew by %d KiB over 400 MB of put-and-drop", grow)
	}
	// Workers' puts and task results.
	for range 4 {
		if _, err := gray.Get(ctx, stPuts.Remote(25)); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		stMake.Remote(1)
	}
	settleStore(t, n, 0)
}

func settleStore(t *testing.T, n *node.Node, max int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		st := n.SharedStats()
		if st.Objects <= max {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store still holds %d objects (%d bytes), want at most %d", st.Objects, st.Used, max)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterResources(t *testing.T) {
	if gray.ClusterResources() != nil {
		t.Fatal("ClusterResources before Init is not nil")
	}
	startStore(t, 16<<20, 2)
	if got := gray.ClusterResources(); got["CPU"] != 2 {
		t.Fatalf("ClusterResources = %v, want CPU=2", got)
	}
	if got := gray.AvailableResources(); got["CPU"] != 2 {
		t.Fatalf("AvailableResources = %v, want CPU=2 while idle", got)
	}
}
