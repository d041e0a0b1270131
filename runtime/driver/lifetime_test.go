package driver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/objstore"
)

// Values a zero-copy Get returns in the driver stay valid for as long as
// they are reachable, whether or not a Ref to their object is: the most
// common idiom, v, _ := gray.Get(ctx, f.Remote(x)), drops the Ref at once.

// lifeStruct is a value holding zero-copy slices.
type lifeStruct struct {
	Name string
	A    []float64
	B    []int32
}

// lifeF64 is element i of the seed's []float64: whole numbers, so sums
// are exact.
func lifeF64(seed, i int) float64 { return float64(seed*7919 + i%1000003) }

func lifeByte(seed, i int) byte { return byte(seed*31 + i*7) }

var (
	lifeMakeF64 = gray.Func1("life.f64", func(ctx context.Context, a [2]int) ([]float64, error) {
		x := make([]float64, a[1])
		for i := range x {
			x[i] = lifeF64(a[0], i)
		}
		return x, nil
	})
	lifeMakeBytes = gray.Func1("life.bytes", func(ctx context.Context, a [2]int) ([]byte, error) {
		x := make([]byte, a[1])
		for i := range x {
			x[i] = lifeByte(a[0], i)
		}
		return x, nil
	})
	lifeMakeStruct = gray.Func1("life.struct", func(ctx context.Context, a [2]int) (lifeStruct, error) {
		return makeLifeStruct(a[0], a[1]), nil
	})
)

func makeLifeStruct(seed, n int) lifeStruct {
	s := lifeStruct{Name: fmt.Sprint("s", seed), A: make([]float64, n/16), B: make([]int32, n/8)}
	for i := range s.A {
		s.A[i] = lifeF64(seed, i)
	}
	for i := range s.B {
		s.B[i] = int32(seed - i)
	}
	return s
}

func sumF64(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func wantSumF64(seed, n int) float64 {
	s := 0.0
	for i := range n {
		s += lifeF64(seed, i)
	}
	return s
}

// checkF64 and the others report how a value differs from the seed's.
func checkF64(x []float64, seed, n int) error {
	if len(x) != n || sumF64(x) != wantSumF64(seed, n) {
		return fmt.Errorf("[]float64 of seed %d: %d elements summing to %v, want %d summing to %v", seed, len(x), sumF64(x), n, wantSumF64(seed, n))
	}
	return nil
}

func checkBytes(x []byte, seed, n int) error {
	if len(x) != n {
		return fmt.Errorf("[]byte of seed %d: %d bytes, want %d", seed, len(x), n)
	}
	for i, b := range x {
		if b != lifeByte(seed, i) {
			return fmt.Errorf("[]byte of seed %d: byte %d is %d, want %d", seed, i, b, lifeByte(seed, i))
		}
	}
	return nil
}

func checkStruct(x lifeStruct, seed, n int) error {
	w := makeLifeStruct(seed, n)
	if x.Name != w.Name || len(x.B) != len(w.B) {
		return fmt.Errorf("struct of seed %d: %q with %d int32s, want %q with %d", seed, x.Name, len(x.B), w.Name, len(w.B))
	}
	if err := checkF64(x.A, seed, len(w.A)); err != nil {
		return fmt.Errorf("struct: %w", err)
	}
	var s, ws int64
	for i := range x.B {
		s += int64(x.B[i])
		ws += int64(w.B[i])
	}
	if s != ws {
		return fmt.Errorf("struct of seed %d: int32s sum to %d, want %d", seed, s, ws)
	}
	return nil
}

// churn puts and frees objects of each size (which reuse freed pages when
// the store may), and drops others for the collector to free.
func churn(t *testing.T, sizes []int) {
	t.Helper()
	ctx := context.Background()
	for round := range 3 {
		for _, n := range sizes {
			x := make([]byte, n)
			for i := range x {
				x[i] = 0xEE
			}
			r, err := gray.Put(ctx, x)
			if err != nil {
				t.Fatal(err)
			}
			if round%2 == 0 {
				if err := gray.Free(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		runtime.GC()
	}
}

func TestZeroCopyValuesOutliveTheirRefs(t *testing.T) {
	n := startStore(t, 768<<20, 2)
	ctx := context.Background()
	sizes := []struct {
		name  string
		bytes int
		count int
	}{
		{"100KiB", 100 << 10, 8},
		{"1MiB", 1 << 20, 20},
		{"64MiB", 64 << 20, 1},
	}
	type kept struct {
		check func() error
	}
	var all []kept
	var churnSizes []int
	seed := 0
	for _, sz := range sizes {
		churnSizes = append(churnSizes, sz.bytes)
		for range sz.count {
			seed++
			s, nb := seed, sz.bytes
			// The idiom: the Ref is dropped as soon as Get returns.
			f, err := gray.Get(ctx, lifeMakeF64.Remote([2]int{s, nb / 8}))
			if err != nil {
				t.Fatal(err)
			}
			b, err := gray.Get(ctx, lifeMakeBytes.Remote([2]int{s, nb}))
			if err != nil {
				t.Fatal(err)
			}
			st, err := gray.Get(ctx, lifeMakeStruct.Remote([2]int{s, nb}))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all,
				kept{func() error { return checkF64(f, s, nb/8) }},
				kept{func() error { return checkBytes(b, s, nb) }},
				kept{func() error { return checkStruct(st, s, nb) }})
		}
		// Through GetAll, and a Put whose Ref is dropped at once.
		seed++
		s, nb := seed, sz.bytes
		vs, err := gray.GetAll(ctx, []gray.Ref[[]float64]{lifeMakeF64.Remote([2]int{s, nb / 8}), lifeMakeF64.Remote([2]int{s + 1000, nb / 8})})
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, nb/8)
		for i := range x {
			x[i] = lifeF64(s+2000, i)
		}
		p, err := gray.Get(ctx, must(gray.Put(ctx, x)))
		if err != nil {
			t.Fatal(err)
		}
		x = nil
		all = append(all,
			kept{func() error { return checkF64(vs[0], s, nb/8) }},
			kept{func() error { return checkF64(vs[1], s+1000, nb/8) }},
			kept{func() error { return checkF64(p, s+2000, nb/8) }})
	}
	// Every Ref is gone: once collected, the driver frees every object.
	settleStore(t, n, 0)
	if st := n.SharedStats(); st.DrainingBytes == 0 {
		t.Fatalf("no object drains although the program holds values of them: %+v", st)
	}
	churn(t, churnSizes)
	for i, k := range all {
		if err := k.check(); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
	}
	runtime.KeepAlive(all)

	// Dropped, the values' pages are reused.
	all = nil
	runtime.GC()
	if st := n.SharedStats(); st.DrainingBytes != 0 {
		t.Fatalf("after dropping the values: %d bytes still drain", st.DrainingBytes)
	}
}

// A write to a value the driver got zero-copy, whose Ref is gone, still
// stops the program with "unexpected fault address", as Get documents
// (shown in a child process), never changing the object.
func TestDriverWriteToGotValueFaults(t *testing.T) {
	if os.Getenv("GRAY_TEST_DRIVER_WRITE") == "1" {
		startStore(t, 64<<20, 1)
		ctx := context.Background()
		v, err := gray.Get(ctx, must(gray.Put(ctx, make([]float64, 1<<17))))
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
		v[100] = 1
		fmt.Println("CHILD-WROTE")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDriverWriteToGotValueFaults$")
	cmd.Env = append(os.Environ(), "GRAY_TEST_DRIVER_WRITE=1")
	out, err := cmd.CombinedOutput()
	_, _ = objstore.CleanStale("/dev/shm") // the crashed child's store
	if err == nil || strings.Contains(string(out), "CHILD-WROTE") || !strings.Contains(string(out), "unexpected fault address") {
		t.Fatalf("a write in the driver: err %v, output:\n%s", err, out)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
