package hyperopt

import (
	"context"
	"fmt"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/datasets/fashionmnist"
)

// Job is one training segment's instructions.
type Job struct {
	HP    Hyperparameters `cbor:"hp"`
	Steps int             `cbor:"steps"`
	Seed  uint64          `cbor:"seed"`
	// Threads is the goroutines each minibatch is split over (0 means 1;
	// see TrainThreads).
	Threads int `cbor:"threads"`
}

// Segment is the remote function both search examples run: train job.HP
// for job.Steps from model on train, measure on val. The data sets arrive
// by reference, put into the object store once by the driver and read
// there without a copy by every worker.
var Segment = gray.Func4x2("hyperopt.train_cnn_and_compute_accuracy",
	func(ctx context.Context, job Job, model Model, train, val fashionmnist.Set) (Outcome, Model, error) {
		return TrainThreads(job.HP, model, &train, &val, job.Steps, job.Seed, max(1, job.Threads))
	})

// Refs are the data sets in the object store.
type Refs struct {
	Train, Val gray.Ref[fashionmnist.Set]
}

// Put puts the training and validation sets into the object store.
func (d Data) Put(ctx context.Context) (Refs, error) {
	train, err := gray.Put(ctx, *d.Train)
	if err != nil {
		return Refs{}, fmt.Errorf("hyperopt: putting the training set: %w", err)
	}
	val, err := gray.Put(ctx, *d.Val)
	if err != nil {
		return Refs{}, fmt.Errorf("hyperopt: putting the validation set: %w", err)
	}
	return Refs{Train: train, Val: val}, nil
}
