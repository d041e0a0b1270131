package gray

import (
	"context"
	"errors"
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
