package gray

import (
	"context"
	"fmt"
	"maps"

	"github.com/gray-ml/gray/runtime/task"
)

// ActorOptions are the resources of one actor, given when it is created
// (Ray's .options(num_cpus=..., num_gpus=..., resources=...)). They
// replace the amounts registered with the actor type: fields left zero
// reserve none of that resource.
type ActorOptions struct {
	// CPUs the actor reserves for its lifetime.
	CPUs float64
	// GPUs the actor reserves for its lifetime (whole numbers); it
	// receives their IDs from GPUIDs and in CUDA_VISIBLE_DEVICES.
	GPUs float64
	// Resources are custom resources, by name.
	Resources map[string]float64
}

// RemoteWith creates an actor like Remote, reserving opts' resources
// instead of those registered with the type; they are held while the
// actor lives and released when it ends, as registered ones are. Negative
// amounts, and requests the node can never meet, are errors.
func (t *ActorType[T]) RemoteWith(ctx context.Context, opts ActorOptions, args ...any) (Handle[T], error) {
	if opts.CPUs < 0 || opts.GPUs < 0 {
		return Handle[T]{}, fmt.Errorf("gray: creating actor %s: ActorOptions CPUs (%g) and GPUs (%g) must not be negative", t.name, opts.CPUs, opts.GPUs)
	}
	for k, v := range opts.Resources {
		if k == "" || v < 0 {
			return Handle[T]{}, fmt.Errorf("gray: creating actor %s: ActorOptions resource %q=%g: names must be non-empty and amounts non-negative", t.name, k, v)
		}
	}
	res := &task.Resources{CPU: opts.CPUs, GPU: opts.GPUs, Custom: maps.Clone(opts.Resources)}
	return t.remote(ctx, res, args)
}
