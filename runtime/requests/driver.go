package requests

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// The driver's program's Get and Wait (the node's, which the gray
// package calls): each takes the node's lock to make its request, waits
// for the answer outside it, and takes it again to read.

// shut reports whether the node has shut down; the caller holds the lock.
func (t *Table[W]) shut() bool {
	select {
	case <-t.Done:
		return true
	default:
		return false
	}
}

// askDriver makes a request of the driver's program; nil: the node has
// shut down. The caller holds the lock.
func (t *Table[W]) askDriver(oids []ids.ObjectID, need int, wait bool) *Request[W] {
	if t.shut() {
		return nil
	}
	var driver W
	return t.add(driver, 0, oids, need, wait, sched.NoWorker, false)
}

// Get returns the objects, waiting for those not yet stored. A
// synchronous call's Get first reads the connection of the worker that
// makes its result itself (Workers.HelpFor), so that no second thread is
// woken to hand the answer over.
func (t *Table[W]) Get(ctx context.Context, oids []ids.ObjectID) ([]task.Object, error) {
	t.Lock()
	r := t.askDriver(oids, len(oids), false)
	if r == nil {
		t.Unlock()
		return nil, objects.ErrShutdown
	}
	done := r.done
	var help func(func() bool)
	if !done {
		help = t.Workers.HelpFor(oids)
	}
	t.Unlock()
	if !done {
		if help != nil {
			help(r.answered)
		}
		select {
		case <-r.ch:
		case <-ctx.Done():
			t.Lock()
			t.Waits.Drop(r.rq)
			t.Unlock()
			return nil, fmt.Errorf("gray: get: %w", ctx.Err())
		case <-t.Done:
			return nil, objects.ErrShutdown
		}
	}
	out := make([]task.Object, len(oids))
	t.Lock()
	for i, id := range oids {
		o, again, err := t.Objects.Read(id)
		if err != nil {
			t.Unlock()
			return nil, fmt.Errorf("gray: get: %w", err)
		}
		if again != nil {
			// On another node (pulled here now), or evicted or lost since
			// it was ready (rebuilt now): look again once it is here.
			t.Unlock()
			select {
			case <-again:
			case <-ctx.Done():
				return nil, fmt.Errorf("gray: get: %w", ctx.Err())
			case <-t.Done:
				return nil, objects.ErrShutdown
			}
			return t.Get(ctx, oids)
		}
		out[i] = o
	}
	t.Unlock()
	return out, nil
}

// Wait returns which of the objects exist once num of them do, or timeout
// (0: none) has passed, or ctx is done.
func (t *Table[W]) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	t.Lock()
	r := t.askDriver(oids, num, true)
	if r == nil {
		t.Unlock()
		return nil, objects.ErrShutdown
	}
	done := r.done
	t.Unlock()
	if !done {
		var tc <-chan time.Time
		if timeout > 0 {
			tm := time.NewTimer(timeout)
			defer tm.Stop()
			tc = tm.C
		}
		select {
		case <-r.ch:
		case <-tc:
		case <-ctx.Done():
			t.Lock()
			t.Waits.Drop(r.rq)
			t.Unlock()
			return nil, fmt.Errorf("gray: wait: %w", ctx.Err())
		case <-t.Done:
			return nil, objects.ErrShutdown
		}
	}
	t.Lock()
	defer t.Unlock()
	t.Waits.Timeout(r.rq) // answers it now, unless it was answered already
	t.Step()
	return append([]bool(nil), r.ready...), nil
}
