package gray

import (
	"context"
	"fmt"
	"sync"

	"github.com/gray-ml/gray/runtime/task"
)

// ReusableVar is a per-process value made once by an initializer and reused
// by every task that runs in that process (Ray 0.2's ray.reusables):
// for values that cannot travel between processes or are slow to build.
type ReusableVar[T any] struct {
	name   string
	init   func() (T, error)
	reinit func(T) (T, error)

	mu   sync.Mutex
	val  T
	made bool
}

var reusableNames sync.Map

// Reusable registers a reusable variable. After each task that used it, a
// worker resets it with reinit, or with init again when reinit is nil, so
// no state leaks from one task into the next. Call it at package level.
func Reusable[T any](name string, init func() (T, error), reinit func(T) (T, error)) *ReusableVar[T] {
	if init == nil {
		panic(fmt.Sprintf("gray: reusable %q needs an initializer", name))
	}
	if _, dup := reusableNames.LoadOrStore(name, true); dup {
		panic(fmt.Sprintf("gray: reusable %q is registered twice", name))
	}
	return &ReusableVar[T]{name: name, init: init, reinit: reinit}
}

// Get returns the variable's value in this process, making it on first
// use. Inside a task, the value is reset after the task ends.
func (r *ReusableVar[T]) Get(ctx context.Context) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.made {
		v, err := r.init()
		if err != nil {
			var zero T
			return zero, fmt.Errorf("gray: reusable %q: initializer: %w", r.name, err)
		}
		r.val, r.made = v, true
	}
	if info := task.InfoFrom(ctx); info != nil {
		info.AfterOnce(r, r.reset)
	}
	return r.val, nil
}

// reset runs after a task that used the variable.
func (r *ReusableVar[T]) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.made {
		return
	}
	var v T
	var err error
	if r.reinit != nil {
		v, err = r.reinit(r.val)
	} else {
		v, err = r.init()
	}
	if err != nil {
		// Make it afresh on next use; the next Get reports a failing init.
		var zero T
		r.val, r.made = zero, false
		return
	}
	r.val = v
}
