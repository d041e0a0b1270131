package worker

import (
	"runtime"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// References carried inside values. Messages on the connection keep their
// order, so a hold or containment sent while the value is still reachable
// reaches the driver before any drop the value's collection may send.

// Hold tells the driver this process decoded a reference to id out of a
// value: the object stays until a matching Drop.
func (w *Worker) Hold(id ids.ObjectID) {
	w.nested.Add(1)
	_ = w.conn.Send(task.MsgHold, func(b []byte) []byte {
		b = wire.AppendUvarint(b, 1)
		return append(b, id[:]...)
	})
}

// Contain tells the driver that the value of object parent refers to
// children, which then live as long as parent does.
func (w *Worker) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	w.nested.Add(1)
	if w.direct != nil {
		w.direct.contain(parent, children) // results of direct calls (direct.go)
	}
	_ = w.conn.Send(task.MsgContain, func(b []byte) []byte {
		b = append(b, parent[:]...)
		b = wire.AppendUvarint(b, uint64(len(children)))
		for _, c := range children {
			b = append(b, c[:]...)
		}
		return b
	})
}

// collectNested runs a collection after a task that decoded or stored
// references inside values: an idle worker may not collect for a long
// time, and until it does, the references the task no longer uses keep
// their objects in the driver.
func (w *Worker) collectNested() {
	if w.nested.Swap(0) > 0 {
		runtime.GC()
	}
}

// ContainResult is Contain for return value i of the running task.
func (w *Worker) ContainResult(i int, children []ids.ObjectID) {
	w.mu.Lock()
	id := ids.Return(w.cur, i)
	w.mu.Unlock()
	if w.callee.running.Load() {
		w.callee.refs.Store(true) // its caller publishes the result (direct.go)
	}
	w.Contain(id, children)
}
