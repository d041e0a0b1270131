package sched

import "github.com/gray-ml/gray/runtime/task"

// Account is what the scheduler counts on one node of its job: the node's
// resources for the job, what of them is free, and the live work it runs
// there (the driver publishes it as the job's load on each node).
type Account struct {
	// Name is the cluster's ID of the node; "" for the driver's own node
	// outside a cluster or when no cluster node runs on its machine.
	Name             string
	Total, Available task.Resources
	// Tasks counts the tasks sent to the node's workers and not finished;
	// Actors the live actors holding resources there (Core.Load).
	Tasks, Actors int
}

// Accounts returns the account of every node of the job, the driver's own
// node first; name names each node.
func (cl *Cluster[T]) Accounts(name func(NodeID) string) []Account {
	out := make([]Account, 0, len(cl.order))
	for _, k := range cl.order {
		c := cl.cores[k]
		tasks, actors := c.Load()
		out = append(out, Account{Name: name(k), Total: c.Total(), Available: c.Available(), Tasks: tasks, Actors: actors})
	}
	return out
}
