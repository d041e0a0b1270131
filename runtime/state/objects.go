package state

import (
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// What a driver shows of its objects (gray.InspectObject and
// gray.ClusterObjectStats read these; runtime/objects fills them).

// ObjectState is what the driver knows of one object.
type ObjectState struct {
	Size    int    // bytes of its value (inline or in shared memory)
	Shared  bool   // in the shared-memory store
	Failed  string // the error it holds instead of a value, if any
	Creator ids.TaskID
}

// ObjectStats counts the movement of a cluster driver's objects.
type ObjectStats struct {
	Served  int64 // bytes the driver's transfer server sent to other nodes
	Pulled  int64 // bytes the driver pulled into its store for its Gets
	Remote  int   // objects held by other nodes only, now
	Lost    int   // objects lost with their node (or a failed pull)
	Rebuilt int   // of those, rebuilt from lineage
	// LastRebuilt is when the last lost object was rebuilt.
	LastRebuilt time.Time
	// Retried counts tasks run again because a worker could not pull an
	// argument.
	Retried int
}
