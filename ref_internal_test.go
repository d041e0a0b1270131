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
