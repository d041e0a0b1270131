package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// Actor checkpoints (gray.CheckpointInterval).
//
// An actor type registered with a checkpoint interval of N has its state
// saved after every N method calls: once a call's result is sent, the
// worker asks the instance for its checkpoint and sends it to the driver
// (MsgCheckpoint), before it runs the next call. The driver keeps it, and
// trims its log of calls to replay up to that call. When the actor is
// restarted, its constructor runs again, then a KindActorRestore task
// hands the instance the checkpoint, then the calls made after it are
// replayed.

// checkpointer is what an actor type implements to be checkpointed
// (gray.Checkpointer documents it for users).
type checkpointer interface {
	Checkpoint(ctx context.Context) ([]byte, error)
	Restore(ctx context.Context, data []byte) error
}

// errNoCheckpointer is the constructor's error when the type asks for
// checkpoints but cannot give them.
func errNoCheckpointer(e *task.Entry, instance any) error {
	return fmt.Errorf("actor type %s is registered with CheckpointInterval(%d), but %T does not implement gray.Checkpointer "+
		"(Checkpoint(context.Context) ([]byte, error) and Restore(context.Context, []byte) error)", e.Name, e.CheckpointInterval, instance)
}

// restore hands the actor instance its checkpoint.
func (w *Worker) restore(ctx context.Context, args [][]byte) error {
	c, ok := w.instance.(checkpointer)
	if !ok || len(args) != 1 {
		return errors.New("this actor cannot be restored from a checkpoint: it does not implement gray.Checkpointer")
	}
	w.sinceCheckpoint = 0
	return c.Restore(ctx, args[0])
}

// checkpointAfter counts method call s and, every CheckpointInterval
// calls, sends the driver the actor's checkpoint. A failed checkpoint is
// reported to the driver, which keeps replaying from the previous one.
func (w *Worker) checkpointAfter(s *task.Spec) {
	if s.Kind != task.KindActorMethod || w.instance == nil {
		return
	}
	ctype, err := task.Lookup(w.actorType)
	if err != nil || ctype.CheckpointInterval <= 0 {
		return
	}
	w.sinceCheckpoint++
	if w.sinceCheckpoint < ctype.CheckpointInterval {
		return
	}
	w.sinceCheckpoint = 0
	c, ok := w.instance.(checkpointer)
	if !ok {
		return // the constructor failed already
	}
	data, cerr := checkpointOf(w.ctx, c)
	_ = w.conn.Send(task.MsgCheckpoint, func(b []byte) []byte {
		b = append(b, s.ID[:]...)
		if cerr != nil {
			b = append(b, 0)
			return wire.AppendString(b, cerr.Error())
		}
		b = append(b, 1)
		return wire.AppendBytes(b, data)
	})
}

// checkpointOf calls c.Checkpoint, turning a panic into an error.
func checkpointOf(ctx context.Context, c checkpointer) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the actor's Checkpoint method panicked: %v", r)
		}
	}()
	return c.Checkpoint(ctx)
}
