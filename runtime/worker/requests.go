package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The program's requests about objects and actors that need no answer
// beyond a Wait's: Drop, Free, Wait and Kill.

// Drop tells the driver this process holds no reference to the object.
func (w *Worker) Drop(id ids.ObjectID) {
	if w.direct != nil && w.direct.drop(id) {
		return
	}
	_ = w.conn.Send(task.MsgDrop, func(b []byte) []byte {
		b = wire.AppendUvarint(b, 1)
		return append(b, id[:]...)
	})
}

// Free tells the driver the running program freed these objects
// (gray.Free). Messages on the connection keep their order, so a later Get
// from this worker sees the objects freed.
func (w *Worker) Free(oids []ids.ObjectID) error {
	if w.direct != nil {
		if oids = w.direct.free(oids); len(oids) == 0 {
			return nil
		}
	}
	err := w.conn.Send(task.MsgFree, func(b []byte) []byte {
		b = wire.AppendUvarint(b, uint64(len(oids)))
		for _, id := range oids {
			b = append(b, id[:]...)
		}
		return b
	})
	if err != nil {
		return fmt.Errorf("gray: free: %w", err)
	}
	return nil
}

// Wait asks the driver which objects exist once num do or timeout passes.
func (w *Worker) Wait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	if w.direct != nil && w.direct.anyOwned(oids) {
		return w.direct.wait(ctx, oids, num, timeout) // results of direct calls (direct.go)
	}
	return w.driverWait(ctx, oids, num, timeout)
}

// driverWait is Wait, asked of the driver.
func (w *Worker) driverWait(ctx context.Context, oids []ids.ObjectID, num int, timeout time.Duration) ([]bool, error) {
	var p []byte
	var err error
	w.blockLeased(func() { // lease_callee.go
		p, err = w.request(ctx, task.MsgWait, func(b []byte) []byte {
			b = wire.AppendUvarint(b, uint64(num))
			b = wire.AppendUvarint(b, uint64(max(timeout, 0)))
			b = wire.AppendUvarint(b, uint64(len(oids)))
			for _, id := range oids {
				b = append(b, id[:]...)
			}
			return b
		})
	})
	if err != nil {
		return nil, fmt.Errorf("gray: wait: %w", err)
	}
	d := wire.Dec{B: p}
	n := d.Count()
	ready := make([]bool, n)
	for i := range ready {
		ready[i] = d.Byte() == 1
	}
	if d.Err != nil || n != len(oids) {
		return nil, fmt.Errorf("gray: wait: malformed reply from the driver")
	}
	return ready, nil
}

// Kill asks the driver to kill an actor.
func (w *Worker) Kill(id ids.ActorID) error {
	return w.conn.Send(task.MsgKillActor, func(b []byte) []byte { return append(b, id[:]...) })
}
