package objstore_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gray-ml/gray/runtime/codec"
	"github.com/gray-ml/gray/runtime/objstore"
)

// weights is what the test shares: a large array inside a struct, as a
// policy's parameters would be.
type weights struct {
	Name string
	W    []float64
}

const (
	childDirEnv = "GRAY_OBJSTORE_TEST_CHILD_DIR"
	childIDEnv  = "GRAY_OBJSTORE_TEST_CHILD_ID"
	bigLen      = 100 << 20 / 8 // 100 MiB of float64
)

// memStatus reads the resident-memory lines of /proc/self/status, in bytes.
func memStatus(t testing.TB) map[string]int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 10, 64)
		if err == nil {
			out[k] = n << 10
		}
	}
	return out
}

type childReport struct {
	Inside     bool    // the slice's data lies inside this process's mapping
	Sum        float64 // of every element: every page was read
	Name       string
	AnonGrowth int64 // RssAnon after - before: private memory
	ShmGrowth  int64 // RssShmem after - before: shared pages mapped in
	Err        string
}

// TestSharedArrayChild is the reader half of TestSharedArrayFourProcesses,
// run in a child process; it does nothing when run directly.
func TestSharedArrayChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("only runs as a child of TestSharedArrayFourProcesses")
	}
	rep := childReport{}
	before := memStatus(t)
	m, err := objstore.Map(dir, objstore.ID(os.Getenv(childIDEnv)))
	if err != nil {
		rep.Err = err.Error()
	} else {
		var w weights
		if err := codec.DecodeZeroCopy(m.Bytes(), &w); err != nil {
			rep.Err = err.Error()
		} else {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(m.Bytes())))
			p := uintptr(unsafe.Pointer(unsafe.SliceData(w.W)))
			rep.Inside = p >= start && p+uintptr(len(w.W))*8 <= start+uintptr(len(m.Bytes()))
			for _, x := range w.W {
				rep.Sum += x
			}
			rep.Name = w.Name
		}
	}
	after := memStatus(t)
	rep.AnonGrowth = after["RssAnon"] - before["RssAnon"]
	rep.ShmGrowth = after["RssShmem"] - before["RssShmem"]
	b, _ := json.Marshal(rep)
	fmt.Printf("CHILD-REPORT %s\n", b)
	if m != nil {
		_ = m.Close()
	}
}

// TestSharedArrayFourProcesses puts a 100 MiB float64 array once and has
// four real processes read all of it: each one's slice points into its own
// read-only mapping of the same shared pages, and none of them gains
// anything like 100 MiB of private memory.
func TestSharedArrayFourProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 100 MiB through shared memory")
	}
	s, err := objstore.Open(objstore.Options{Session: fmt.Sprintf("test-4proc-%d", os.Getpid()), Capacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := weights{Name: "policy", W: make([]float64, bigLen)}
	var want float64
	for i := range v.W {
		v.W[i] = float64(i % 1000)
		want += v.W[i]
	}
	enc, err := codec.Prepare(v)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create("weights", int64(enc.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.EncodeTo(w.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	v.W = nil
	// The runtime pins an object for as long as workers read it.
	if err := s.Pin("weights"); err != nil {
		t.Fatal(err)
	}
	defer s.Unpin("weights")

	const children = 4
	reports := make([]childReport, children)
	errs := make([]error, children)
	var wg sync.WaitGroup
	for i := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSharedArrayChild$", "-test.v")
			cmd.Env = append(os.Environ(), childDirEnv+"="+s.Dir(), childIDEnv+"=weights")
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("child %d: %v\n%s", i, err, out)
				return
			}
			for _, line := range strings.Split(string(out), "\n") {
				if j, ok := strings.CutPrefix(line, "CHILD-REPORT "); ok {
					errs[i] = json.Unmarshal([]byte(j), &reports[i])
					return
				}
			}
			errs[i] = fmt.Errorf("child %d printed no report:\n%s", i, out)
		}()
	}
	wg.Wait()
	for i := range children {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		r := reports[i]
		t.Logf("child %d: inside mapping=%v, private growth %d KiB, shared pages mapped %d KiB", i, r.Inside, r.AnonGrowth>>10, r.ShmGrowth>>10)
		if r.Err != "" {
			t.Fatalf("child %d: %s", i, r.Err)
		}
		if !r.Inside {
			t.Errorf("child %d: the decoded slice does not point into the mapping: it was copied", i)
		}
		if r.Sum != want || r.Name != "policy" {
			t.Errorf("child %d read sum %v name %q, want %v %q", i, r.Sum, r.Name, want, "policy")
		}
		if r.AnonGrowth > 20<<20 {
			t.Errorf("child %d grew its private memory by %d MiB reading a 100 MiB object: it copied", i, r.AnonGrowth>>20)
		}
		if r.ShmGrowth < 90<<20 {
			t.Errorf("child %d mapped only %d MiB of shared pages; expected the 100 MiB object", i, r.ShmGrowth>>20)
		}
	}
	// One copy in shared memory, whatever the number of readers.
	if n := dirSize(t, s.Dir()); n > 101<<20 {
		t.Errorf("store directory holds %d MiB for one 100 MiB object", n>>20)
	}
}

func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestPutAndDropFlatMemory puts, reads and drops 1 MiB objects in a loop:
// shared memory and the process's resident memory stay bounded.
func TestPutAndDropFlatMemory(t *testing.T) {
	s, err := objstore.Open(objstore.Options{Session: fmt.Sprintf("test-flat-%d", os.Getpid()), Capacity: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src := make([]float64, 1<<20/8)
	for i := range src {
		src[i] = float64(i)
	}
	const iters = 3000
	var rss0, maxDir int64
	for i := range iters {
		id := objstore.ID("obj-" + strconv.Itoa(i))
		enc, err := codec.Prepare(src)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Create(id, int64(enc.Size()))
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if _, err := enc.EncodeTo(w.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := w.Seal(); err != nil {
			t.Fatal(err)
		}
		b, err := s.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		if err := codec.DecodeZeroCopy(b, &got); err != nil || got[12345] != 12345 {
			t.Fatalf("iteration %d: %v", i, err)
		}
		_ = s.Unpin(id)
		if i%100 == 0 {
			maxDir = max(maxDir, dirSize(t, s.Dir()))
		}
		if err := s.Release(id); err != nil {
			t.Fatal(err)
		}
		if i == 200 {
			rss0 = memStatus(t)["VmRSS"]
		}
	}
	rss1 := memStatus(t)["VmRSS"]
	st := s.Stats()
	t.Logf("RSS after 200 puts %d MiB, after %d puts %d MiB; largest store directory %d KiB", rss0>>20, iters, rss1>>20, maxDir>>10)
	if st.Used != 0 || st.Objects != 0 || st.Evictions != 0 {
		t.Errorf("after dropping everything: %+v", st)
	}
	if maxDir > 2<<20 {
		t.Errorf("store directory reached %d KiB with at most one live 1 MiB object", maxDir>>10)
	}
	if rss1-rss0 > 48<<20 {
		t.Errorf("resident memory grew by %d MiB over %d put-and-drop rounds", (rss1-rss0)>>20, iters-200)
	}
}

// TestDecodedSliceIsReadOnly writes into a zero-copy slice: under Guard it
// is an error naming the rule; without Guard the process dies loudly
// (shown in a child process), never silently corrupting the store.
func TestDecodedSliceIsReadOnly(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		if os.Getenv(childIDEnv) != "ro" {
			t.Skip("child of another test")
		}
		m, err := objstore.Map(dir, "ro")
		if err != nil {
			t.Fatal(err)
		}
		var w weights
		if err := codec.DecodeZeroCopy(m.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		w.W[0] = 42 // no Guard: the process must crash here
		fmt.Println("CHILD-WROTE")
		return
	}
	s, err := objstore.Open(objstore.Options{Session: fmt.Sprintf("test-ro-%d", os.Getpid()), Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc, err := codec.Prepare(weights{Name: "x", W: []float64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Create("ro", int64(enc.Size()))
	_, _ = enc.EncodeTo(w.Bytes())
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	b, err := s.Get("ro")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unpin("ro")
	var got weights
	if err := codec.DecodeZeroCopy(b, &got); err != nil {
		t.Fatal(err)
	}
	err = objstore.Guard(func() error { got.W[1] = 99; return nil })
	if err == nil || !strings.Contains(err.Error(), "slices from Get are read-only, copy before writing") {
		t.Fatalf("guarded write: %v", err)
	}
	if got.W[1] != 2 {
		t.Fatal("store modified")
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestDecodedSliceIsReadOnly$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+s.Dir(), childIDEnv+"=ro")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "CHILD-WROTE") || !strings.Contains(string(out), "unexpected fault address") {
		t.Fatalf("unguarded write in a child: err %v, output:\n%s", err, out)
	}
}
