package node

import "github.com/gray-ml/gray/runtime/sched"

// NodeAccount is what the driver's scheduler counts on one node of its
// job (sched.Account).
type NodeAccount = sched.Account

// Accounts returns the scheduler's accounts, one per node of the job (the
// driver's own node first). self names the driver's own node.
func (n *Node) Accounts(self string) []NodeAccount {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Accounts(func(k sched.NodeID) string {
		if k != sched.Local && n.remote != nil {
			return n.rec.Name(k)
		}
		return self
	})
}

// CheckScheduler verifies the scheduler's invariants: on every node of
// the job, the free resources plus what running tasks and live actors
// hold add up to the node's total, and nothing is oversubscribed.
func (n *Node) CheckScheduler() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Check()
}
