package gray

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// A Ref is one pointer and its shared record 32 bytes: a program holding a
// million queued tasks' references pays for them (see refKeep).
func TestRefSize(t *testing.T) {
	if got := unsafe.Sizeof(Ref[int]{}); got != unsafe.Sizeof(uintptr(0)) {
		t.Errorf("Ref is %d bytes, want one pointer", got)
	}
	if got := unsafe.Sizeof(refKeep{}); got > 32 {
		t.Errorf("refKeep is %d bytes, want at most 32", got)
	}
}

// The zero Ref and one returned by a call made before Init are refused
// with errors that say so, and never panic.
func TestRefWithoutObject(t *testing.T) {
	ctx := context.Background()
	var zero Ref[int]
	if zero.ID() != (ObjectID{}) {
		t.Fatalf("zero Ref has ID %s", zero.ID())
	}
	if _, err := Get(ctx, zero); err == nil || !strings.Contains(err.Error(), "zero Ref") {
		t.Fatalf("Get of the zero Ref: %v", err)
	}
	r := sessionlessRef[int]()
	if _, err := Get(ctx, r); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Get of a Ref made before Init: %v, want ErrNotInitialized", err)
	}
	if err := Free(ctx, r); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Free of a Ref made before Init: %v, want ErrNotInitialized", err)
	}
}

var allocProbe = Func1("test.allocProbe", func(_ context.Context, x int) (int, error) { return x, nil })

// A call's builder stays on the caller's stack (newCall inlines): queueing
// a million tasks allocates no 64-byte call each. Before Init a call
// allocates its Ref's record and nothing else.
func TestRemoteKeepsItsCallOnTheStack(t *testing.T) {
	if current.Load() != nil {
		t.Skip("a session is open; this measures a call made before Init")
	}
	if n := testing.AllocsPerRun(100, func() { allocProbe.Remote(7) }); n > 1 {
		t.Fatalf("Remote before Init allocates %v times, want 1 (its Ref's record; the call builder escaped?)", n)
	}
}

// The references of a run of calls: the first loneRefs get records of
// their own, the rest fill blocks of blockRefs, and a Get, Wait or Free
// starts a new run that shares no block with the last.
func TestResultRefsShareBlocksWithinARun(t *testing.T) {
	cases := []struct {
		name   string
		runs   []int // calls in each run; a consumption between runs
		lone   int
		blocks int
	}{
		{"one call", []int{1}, 1, 0},
		{"a short run", []int{loneRefs}, loneRefs, 0},
		{"one past the lone ones", []int{loneRefs + 1}, loneRefs, 1},
		{"a full block", []int{loneRefs + blockRefs}, loneRefs, 1},
		{"a second block", []int{loneRefs + blockRefs + 1}, loneRefs, 2},
		{"calls consumed one by one", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 10, 0},
		{"two bursts", []int{loneRefs + 2, loneRefs + 2}, 2 * loneRefs, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &session{}
			s.closed.Store(true) // no backend: the finalizers drop nothing
			var keeps []*refKeep
			blocks := map[*refBlock]bool{}
			lone := 0
			for i, n := range c.runs {
				if i > 0 {
					s.refs.consume()
				}
				for j := range n {
					id := ObjectID{byte(i), byte(j)}
					k := s.refs.keep(s, id)
					if k.id != id || k.s != s {
						t.Fatalf("record %+v for %s", k, id)
					}
					if b := s.refs.open.Value(); b != nil && inBlock(b, k) {
						blocks[b] = true
					} else {
						lone++
					}
					keeps = append(keeps, k)
				}
			}
			if lone != c.lone || len(blocks) != c.blocks {
				t.Fatalf("%d lone records and %d blocks, want %d and %d", lone, len(blocks), c.lone, c.blocks)
			}
			runtime.KeepAlive(keeps)
		})
	}
}

func inBlock(b *refBlock, k *refKeep) bool {
	for i := range b.used {
		if &b.keeps[i] == k {
			return true
		}
	}
	return false
}
