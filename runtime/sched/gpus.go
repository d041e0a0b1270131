package sched

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/task"
)

// GPUShort reports, as a one-line error naming the fix, a request for more
// GPUs than any node now in the cluster has, or nil. Other resources a
// node joining later could bring wait for it (Waiting), but a GPU request
// that outgrows every node most often means GPUs were not found (no NVML,
// a head started before the driver install) or a typo, and waiting would
// only hide it: the request fails at once instead.
func (cl *Cluster[T]) GPUShort(name string, r task.Resources) error {
	if r.GPU <= 0 {
		return nil
	}
	most := 0.0
	for _, id := range cl.order {
		most = max(most, cl.cores[id].capacity.GPU)
	}
	if r.GPU <= most {
		return nil
	}
	return fmt.Errorf("%s asks for GPU=%g but the largest of the cluster's %d nodes has GPU=%g; "+
		"lower the request, or add a node with the GPUs first (gray start --address ... finds them with NVML, or give --num-gpus)",
		name, r.GPU, len(cl.order), most)
}
