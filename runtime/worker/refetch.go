package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// refetch is what a worker does when the copy of an object the driver
// named could not be pulled (its node died before or during the pull):
// rather than fail the call — an actor call cannot be sent again without
// breaking the order of the actor's calls — it asks the driver for the
// object again, as a Get (task.MsgGet). The driver answers once the object
// exists again, rebuilt through its lineage or found in another copy,
// naming where it now is (its MsgLocate comes first), or with the error
// that says it is lost for good. Until the driver has declared the node
// dead it may name the same copy again: the worker then tries again after
// a pause, up to pullTimeout in all. first is the failed pull's error.
func (w *Worker) refetch(id ids.ObjectID, first error) error {
	ctx, cancel := context.WithTimeout(w.ctx, pullTimeout)
	defer cancel()
	err, pause := first, 20*time.Millisecond
	for {
		objs, gerr := w.getObjects(ctx, []ids.ObjectID{id})
		switch {
		case gerr != nil:
			return errors.Join(err, gerr)
		case objs[0].Err != nil:
			return objs[0].Err
		case !objs[0].Shared:
			return fmt.Errorf("object %s came back inline after its shared copy could not be pulled: %w", id, err)
		}
		if err = w.ensureLocal(id); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
