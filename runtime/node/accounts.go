package node

import (
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// NodeAccount is what the driver's scheduler counts on one node of its
// job: the node's resources for the job, what of them is free, and the
// live work it runs there.
type NodeAccount struct {
	// Name is the cluster's ID of the node; "" for the driver's own node
	// outside a cluster or when no cluster node runs on its machine.
	Name             string
	Total, Available task.Resources
	// Tasks counts the tasks sent to the node's workers and not finished;
	// Actors the live actors holding resources there (sched.Core.Load).
	Tasks, Actors int
}

// Accounts returns the scheduler's accounts, one per node of the job (the
// driver's own node first). self names the driver's own node.
func (n *Node) Accounts(self string) []NodeAccount {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []NodeAccount
	for _, k := range n.core.Nodes() {
		c := n.core.Node(k)
		name := self
		if k != sched.Local && n.remote != nil {
			name = n.rec.Name(k)
		}
		tasks, actors := c.Load()
		out = append(out, NodeAccount{Name: name, Total: c.Total(), Available: c.Available(), Tasks: tasks, Actors: actors})
	}
	return out
}

// CheckScheduler verifies the scheduler's invariants: on every node of
// the job, the free resources plus what running tasks and live actors
// hold add up to the node's total, and nothing is oversubscribed.
func (n *Node) CheckScheduler() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Check()
}
