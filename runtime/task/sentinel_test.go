package task

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/wire"
)

var (
	errUserBudget = RegisterSentinel(errors.New("task test: budget exceeded"))
	errUnknown    = errors.New("task test: never registered")
)

// roundTrip sends e as a worker does and decodes it as the driver does.
func roundTrip(t *testing.T, e *TaskError) *TaskError {
	t.Helper()
	b := AppendObject(nil, &Object{Err: e})
	d := wire.Dec{B: b}
	o := DecodeObject(&d)
	if d.Err != nil || o.Err == nil {
		t.Fatalf("decode: %v, %+v", d.Err, o)
	}
	return o.Err
}

func TestSentinelsKeepTheirIdentityOnTheWire(t *testing.T) {
	cases := []struct {
		name  string
		cause error
		is    []error
		isNot []error
	}{
		{"bare gray sentinel", ErrActorDead, []error{ErrActorDead}, []error{ErrWorkerDied}},
		{"wrapped with %w", fmt.Errorf("step 3: %w", ErrFreed), []error{ErrFreed}, nil},
		{"two sentinels", fmt.Errorf("%w (%w)", ErrActorDead, ErrWorkerDied), []error{ErrActorDead, ErrWorkerDied}, nil},
		{"user sentinel", fmt.Errorf("rollout: %w", errUserBudget), []error{errUserBudget}, []error{ErrActorDead}},
		{"unregistered keeps its text only", fmt.Errorf("x: %w", errUnknown), nil, []error{errUnknown}},
		{"nested task error", &TaskError{Function: "inner", Message: "boom", Cause: fmt.Errorf("in inner: %w", errUserBudget)}, []error{errUserBudget}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := roundTrip(t, &TaskError{Function: "f", Worker: "worker 1", Message: c.cause.Error(), Cause: c.cause})
			for _, s := range c.is {
				if !errors.Is(got, s) {
					t.Errorf("errors.Is(decoded, %q) = false, want true", s)
				}
			}
			for _, s := range c.isNot {
				if errors.Is(got, s) {
					t.Errorf("errors.Is(decoded, %q) = true, want false", s)
				}
			}
			if !strings.Contains(got.Error(), c.cause.Error()) {
				t.Errorf("decoded error %q lost the text %q", got, c.cause)
			}
		})
	}
}

func TestRegisterSentinelRules(t *testing.T) {
	if RegisterSentinel(errUserBudget) != errUserBudget {
		t.Fatal("registering the same error again must return it")
	}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("nil", func() { RegisterSentinel(nil) })
	mustPanic("same message, other error", func() { RegisterSentinel(errors.New(errUserBudget.Error())) })
}
