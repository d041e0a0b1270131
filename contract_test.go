package gray_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/objstore"
)

// Promises the API documents, checked across real processes.

// ListNode is a value that can refer to itself.
type ListNode struct {
	V    int
	Next *ListNode
}

var errOverBudget = gray.RegisterError(errors.New("test: over budget"))

var (
	takesList  = gray.Func1("test.takesList", func(ctx context.Context, n *ListNode) (int, error) { return n.V, nil })
	makesCycle = gray.Func0("test.makesCycle", func(ctx context.Context) (*ListNode, error) {
		n := &ListNode{V: 1}
		n.Next = n
		return n, nil
	})
	writesArg = gray.Func1("test.writesArg", func(ctx context.Context, x []float64) (int, error) {
		x[0] = 42 // x maps the shared object read-only
		return 0, nil
	})
	overBudget = gray.Func1("test.overBudget", func(ctx context.Context, step int) (int, error) {
		return 0, fmt.Errorf("step %d: %w", step, errOverBudget)
	})
	// callsOverBudget fails with the error of a task it called itself.
	callsOverBudget = gray.Func0("test.callsOverBudget", func(ctx context.Context) (int, error) {
		_, err := gray.Get(ctx, overBudget.Remote(7))
		return 0, fmt.Errorf("inner call: %w", err)
	})

	mortalType = gray.Actor0("test.Mortal", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil })
	mortalExit = gray.Method0(mortalType, "exit", func(c *Counter, ctx context.Context) (int, error) {
		os.Exit(3)
		return 0, nil
	})
	mortalGet = gray.Method0(mortalType, "get", func(c *Counter, ctx context.Context) (int, error) { return c.value, nil })
)

func TestCyclicValuesAreErrors(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			ctx := start(t, gray.Options{LocalMode: local})
			n := &ListNode{V: 1}
			n.Next = n
			wantCycle := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), "refers to itself") {
					t.Errorf("%s: %v, want an error saying the value refers to itself", what, err)
				}
			}
			_, err := gray.Put(ctx, n)
			wantCycle("Put", err)
			_, err = gray.Get(ctx, takesList.Remote(n))
			wantCycle("argument", err)
			_, err = gray.Get(ctx, makesCycle.Remote())
			wantCycle("result", err)
			// The session is still usable.
			if v, err := gray.Get(ctx, takesList.Remote(&ListNode{V: 5, Next: &ListNode{V: 6}})); err != nil || v != 5 {
				t.Errorf("acyclic list after the failures: %d, %v", v, err)
			}
		})
	}
}

func TestCallsToADeadActorAreErrActorDead(t *testing.T) {
	ctx := start(t, gray.Options{})
	h, err := mortalType.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, mortalGet.Remote(h)); err != nil {
		t.Fatal(err)
	}
	_, err = gray.Get(ctx, mortalExit.Remote(h))
	if !errors.Is(err, gray.ErrActorDead) || !errors.Is(err, gray.ErrWorkerDied) {
		t.Errorf("the call whose process died: %v; want ErrActorDead and ErrWorkerDied", err)
	}
	_, err = gray.Get(ctx, mortalGet.Remote(h))
	if !errors.Is(err, gray.ErrActorDead) || !strings.Contains(err.Error(), "is dead") {
		t.Errorf("a later call: %v; want ErrActorDead", err)
	}
	var te *gray.TaskError
	if !errors.As(err, &te) {
		t.Errorf("a later call: %T, want a *TaskError", err)
	}
}

func TestSentinelErrorsCrossProcesses(t *testing.T) {
	ctx := start(t, gray.Options{})
	big := make([]float64, 1<<15) // 256 KiB: in shared memory, mapped read-only
	_, err := gray.Get(ctx, writesArg.Remote(big))
	if !errors.Is(err, objstore.ErrReadOnly) {
		t.Errorf("a task writing a read-only argument: %v; want errors.Is(err, objstore.ErrReadOnly)", err)
	}
	_, err = gray.Get(ctx, overBudget.Remote(3))
	if !errors.Is(err, errOverBudget) || !strings.Contains(err.Error(), "step 3") {
		t.Errorf("a user sentinel: %v; want errors.Is(err, errOverBudget)", err)
	}
	_, err = gray.Get(ctx, callsOverBudget.Remote())
	if !errors.Is(err, errOverBudget) || !strings.Contains(err.Error(), "step 7") {
		t.Errorf("a user sentinel from a nested call: %v; want errors.Is(err, errOverBudget)", err)
	}
	if errors.Is(err, gray.ErrActorDead) {
		t.Errorf("%v must not match a sentinel it never wrapped", err)
	}
}

func TestTypedWaitAndFree(t *testing.T) {
	ctx := start(t, gray.Options{})
	refs := []gray.Ref[int]{inc.Remote(-1), inc.Remote(0), inc.Remote(1)}
	ready, remaining, err := gray.Wait(ctx, refs, 3, 0)
	if err != nil || len(ready) != 3 || len(remaining) != 0 {
		t.Fatalf("Wait: %d ready, %d remaining, %v", len(ready), len(remaining), err)
	}
	for i, r := range ready { // Refs of the element type: no type assertion
		if v, err := gray.Get(ctx, r); err != nil || v != i {
			t.Errorf("Get(ready[%d]) = %d, %v; want %d", i, v, err, i)
		}
	}
	if err := gray.Free(ctx, refs...); err != nil {
		t.Fatalf("Free(refs...): %v", err)
	}
	if _, err := gray.Get(ctx, refs[0]); !errors.Is(err, gray.ErrFreed) {
		t.Errorf("Get after Free: %v, want ErrFreed", err)
	}
	// References of different types go through AnyRef, as before.
	a, err := gray.Put(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gray.Put(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	mixed := []gray.AnyRef{a, b}
	if ready, _, err := gray.Wait(ctx, mixed, 2, 0); err != nil || len(ready) != 2 {
		t.Fatalf("Wait on []AnyRef: %d ready, %v", len(ready), err)
	}
	if err := gray.Free[gray.AnyRef](ctx, a, b); err != nil {
		t.Fatalf("Free of mixed types: %v", err)
	}
	if _, err := gray.Get(ctx, b); !errors.Is(err, gray.ErrFreed) {
		t.Errorf("Get after a mixed Free: %v, want ErrFreed", err)
	}
}
