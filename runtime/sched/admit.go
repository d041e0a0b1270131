package sched

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/task"
)

// Admit decides whether a request for r by name may be queued, and
// reports why not as a one-line error. A request some node now in the
// cluster can hold is admitted. One none can hold is refused (Feasible),
// unless nodes may join the cluster (joinable): it then waits for a node
// that can hold it (Waiting), except a request for more GPUs than any node
// has, which is refused at once (GPUShort says why).
//
// first is true the first time a request of name is admitted to wait so:
// the shell tells the user then (WaitNote), once per name, rather than
// let the program seem to hang, or say it for each of a burst of calls.
//
// Admit is a question with an answer, not an event of Step: the shell
// needs the error before it files the task at all.
func (cl *Cluster[T]) Admit(name string, r task.Resources, joinable bool) (first bool, err error) {
	err = cl.Feasible(name, r)
	if err == nil || !joinable {
		return false, err
	}
	if err := cl.GPUShort(name, r); err != nil {
		return false, err
	}
	if cl.warned[name] {
		return false, nil
	}
	if cl.warned == nil {
		cl.warned = map[string]bool{}
	}
	cl.warned[name] = true
	return true, nil
}

// WaitNote is what the user is told the first time requests of name for
// r wait for a node that can hold them (Admit): why the program waits, and
// how to end the wait.
func WaitNote(name string, r task.Resources) string {
	return fmt.Sprintf("gray: %s asks for %s, more than any node of the cluster has now; it waits until a node that can hold it joins (gray start --address ... with those resources)", name, r)
}
