package gray

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/state"
)

// Inspector is a driver's runtime as tools and tests see it: what
// Snapshot, Timeline, InspectObject and ClusterObjectStats read. Its
// dynamic type is *driver.Driver (runtime/driver), whose other methods
// (the node's invariant checks, its store's figures) end-to-end tests use.
type Inspector interface {
	// Snapshot is the scheduler's state now.
	Snapshot() state.Snapshot
	// Events records the task events of Timeline (nil: not recorded).
	Events() *events.Recorder
	// Object looks one object up.
	Object(id ids.ObjectID) (state.ObjectState, bool)
	// ObjectStats counts objects moved between the nodes of a cluster.
	ObjectStats() state.ObjectStats
	// Stacks is the goroutine dump of one of the driver's workers, by
	// its number in Snapshot.
	Stacks(ctx context.Context, worker int) (string, error)
	// LogDir is where the workers write their output ("" when it goes to
	// the driver's own).
	LogDir() string
}

// Inspect returns the running driver's Inspector: ErrNotInitialized
// before Init, ErrNoInspection in local mode and inside a worker.
func Inspect() (Inspector, error) {
	s := current.Load()
	if s == nil {
		return nil, ErrNotInitialized
	}
	if s.insp == nil {
		return nil, ErrNoInspection
	}
	return s.insp, nil
}

// ErrNoInspection is returned by Snapshot and Timeline in a session that
// has no scheduler of its own to inspect: local mode, or inside a worker.
var ErrNoInspection = errors.New("gray: this session has no scheduler to inspect (local mode or a worker process); inspect the driver's session")

// TaskEvent is one task's run on one worker, for timelines.
type TaskEvent struct {
	TaskID   string
	Function string
	Worker   int
	Start    time.Time
	End      time.Time
}

// Snapshot returns the running session's scheduler state: its resources,
// workers, unfinished tasks and actors. The dashboard shows it.
func Snapshot() (state.Snapshot, error) {
	n, err := Inspect()
	if err != nil {
		return state.Snapshot{}, err
	}
	return n.Snapshot(), nil
}

// Timeline returns the session's latest task events (the last 65,536
// tasks), oldest first. Recording them costs the scheduler a few tens of
// nanoseconds per task.
func Timeline() ([]TaskEvent, error) {
	n, err := Inspect()
	if err != nil {
		return nil, err
	}
	rec := n.Events()
	if rec == nil {
		return nil, nil // Options.NoTimeline
	}
	evs, _ := rec.Events()
	epoch := rec.Epoch()
	out := make([]TaskEvent, len(evs))
	for i, e := range evs {
		out[i] = TaskEvent{
			TaskID: e.Task.String(), Function: e.Func, Worker: int(e.Worker),
			Start: epoch.Add(time.Duration(e.Start)), End: epoch.Add(time.Duration(e.End)),
		}
	}
	return out, nil
}

// ObjectInfo is what the session knows of one object.
type ObjectInfo struct {
	ID      string
	Size    int    // bytes of its encoded value
	Shared  bool   // in the shared-memory object store
	Failed  string // the error it holds instead of a value, if any
	Creator string // the task (or driver) that created it
}

// InspectObject looks an object of the session up by its ID (40 hex
// digits, as ObjectRef IDs print). It returns false when the session does
// not hold the object (never created, or freed).
func InspectObject(id string) (ObjectInfo, bool, error) {
	n, err := Inspect()
	if err != nil {
		return ObjectInfo{}, false, err
	}
	var oid ids.ObjectID
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != len(oid) {
		return ObjectInfo{}, false, fmt.Errorf("gray: object ID %q is not %d hex digits", id, 2*len(oid))
	}
	copy(oid[:], b)
	st, ok := n.Object(oid)
	if !ok {
		return ObjectInfo{}, false, nil
	}
	return ObjectInfo{ID: oid.String(), Size: st.Size, Shared: st.Shared, Failed: st.Failed, Creator: st.Creator.String()}, true, nil
}
