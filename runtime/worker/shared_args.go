package worker

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/task"
)

// keptSet holds the mappings of the gray.Shared arguments an actor keeps:
// unlike other arguments they are neither copied nor unmapped when the call
// ends. The driver holds each object for the actor (see
// runtime/objects/shared_args.go) until the actor dies or releases it.
type keptSet struct {
	mu    sync.Mutex
	views []keptView
}

type keptView struct {
	id ids.ObjectID
	v  *objstore.View
}

// mapKept maps object id for the actor's lifetime and returns its bytes.
func (w *Worker) mapKept(id ids.ObjectID) ([]byte, error) {
	v, err := w.openView(id)
	if err != nil {
		return nil, err
	}
	w.kept.mu.Lock()
	w.kept.views = append(w.kept.views, keptView{id: id, v: v})
	w.kept.mu.Unlock()
	return v.Bytes(), nil
}

// ReleaseShared ends the actor's hold on the kept object whose bytes start
// at data[0]: its mapping may be unmapped and the driver may free it. It
// reports whether data was a kept object.
func (w *Worker) ReleaseShared(data []byte) (bool, error) {
	if len(data) == 0 {
		return false, nil
	}
	p := unsafe.SliceData(data)
	w.kept.mu.Lock()
	var kv keptView
	found := false
	for i, k := range w.kept.views {
		if b := k.v.Bytes(); len(b) > 0 && unsafe.SliceData(b) == p {
			kv, found = k, true
			w.kept.views = append(w.kept.views[:i], w.kept.views[i+1:]...)
			break
		}
	}
	w.kept.mu.Unlock()
	if !found {
		return false, nil
	}
	kv.v.Done()
	err := w.conn.Send(task.MsgReleaseShared, func(b []byte) []byte { return append(b, kv.id[:]...) })
	if err != nil {
		return true, fmt.Errorf("gray: releasing shared object %s: %w", kv.id, err)
	}
	return true, nil
}
