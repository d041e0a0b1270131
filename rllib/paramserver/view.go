package paramserver

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray"
)

// View is a worker's read-only view of the weights a synchronous server
// ships each round: one part per shard (Client.Step's or
// Client.PullRefs's references, in shard order), each read in place in the
// node's object store, never copied. A worker actor keeps a View in its
// state and gives each part to Set from a method that takes a
// gray.Shared[Pulled]:
//
//	func (w *Worker) SetWeights(ctx context.Context, shard int, part gray.Shared[paramserver.Pulled]) (int64, error) {
//		return w.view.Set(shard, part)
//	}
//
// A View holds each shard's latest part until the next one replaces it
// (the object stays mapped and cannot be freed meanwhile), so that the
// weights stay readable between calls. The vectors Weights returns are
// read-only (see gray.Get) and valid until the next Set or Release.
type View struct {
	parts  []gray.Shared[Pulled]
	merged Named
}

// Set replaces shard's part of the weights with part, releasing the part it
// replaces, and returns part's version. A part whose keys another shard's
// part holds is refused (and released).
func (v *View) Set(shard int, part gray.Shared[Pulled]) (int64, error) {
	if shard < 0 || shard > 1<<16 {
		_ = part.Release()
		return 0, fmt.Errorf("paramserver: View.Set: shard %d is out of range", shard)
	}
	for len(v.parts) <= shard {
		v.parts = append(v.parts, gray.Shared[Pulled]{})
	}
	p := part.Value()
	for s, other := range v.parts {
		if s == shard {
			continue
		}
		for k := range p.Weights {
			if _, dup := other.Value().Weights[k]; dup {
				_ = part.Release()
				return 0, fmt.Errorf("paramserver: View.Set: key %q of shard %d is already in shard %d's part; give each shard's part its own index", k, shard, s)
			}
		}
	}
	old := v.parts[shard]
	v.parts[shard] = part
	v.merged = nil
	return p.Version, old.Release()
}

// Weights returns every shard's part merged into one Named (built again
// only after a Set). Its vectors are read-only views into the object
// store.
func (v *View) Weights() Named {
	if v.merged == nil {
		v.merged = Named{}
		for _, p := range v.parts {
			for k, w := range p.Value().Weights {
				v.merged[k] = w
			}
		}
	}
	return v.merged
}

// Versions returns the version of every shard's part, in shard order.
func (v *View) Versions() []int64 {
	out := make([]int64, len(v.parts))
	for i, p := range v.parts {
		out[i] = p.Value().Version
	}
	return out
}

// Release lets go of every part; the View is empty afterwards.
func (v *View) Release() error {
	var errs []error
	for _, p := range v.parts {
		errs = append(errs, p.Release())
	}
	v.parts, v.merged = nil, nil
	return errors.Join(errs...)
}
