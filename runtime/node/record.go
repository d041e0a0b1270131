package node

import (
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/sched"
)

// taskStarts returns the control store's TaskStarts, or nil when it does
// not record where tasks run (a control.Mem): the send path then pays one
// nil check.
func taskStarts(s control.Store) control.TaskStarts {
	ts, _ := s.(control.TaskStarts)
	return ts
}

// recordStart tells the control store that the task id was sent to w,
// naming w's cluster node ("" for this machine). Called under n.mu.
func (n *Node) recordStart(w *proc, id ids.TaskID) {
	if n.starts == nil {
		return
	}
	name := ""
	if w.node != sched.Local && n.remote != nil {
		name = n.rec.Name(w.node)
	}
	n.starts.TaskStarted(id, name)
}
