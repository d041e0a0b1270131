package node

import (
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Grants that follow demand (sched/grant.go): on a cluster each node's
// core is sized by what that node's daemon granted this driver, which the
// driver (runtime/cluster) grows and shrinks through these methods, off
// the task path.

// AddNodeGrant adds node k (name for messages) whose resources are
// capacity, of which this job holds granted for now; gpus are the indices
// of granted's GPUs (the node owns them).
func (n *Node) AddNodeGrant(k sched.NodeID, name string, granted task.Resources, gpus []int, capacity task.Resources) error {
	return n.addNode(k, name, granted, gpus, capacity)
}

// GrantView returns node k's grant as the scheduler sees it (what queued
// work wants, what is spare) and forgets what it reports returned; false
// if the node is not in the job.
func (n *Node) GrantView(k sched.NodeID) (sched.GrantView, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Grant(k)
}

// GrowGrant adds r, whose GPUs are the indices gpus, to node k's grant:
// queued work starts on it.
func (n *Node) GrowGrant(k sched.NodeID, r task.Resources, gpus []int) {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return
	}
	n.core.Step(sched.Grew{Node: k, Res: r, GPUs: gpus})
	n.step()
}

// ReclaimGrant gives back r of node k's grant: what is free at once, the
// rest as running work ends (the next GrantView reports it).
func (n *Node) ReclaimGrant(k sched.NodeID, r task.Resources) {
	n.mu.Lock()
	defer n.unlock()
	if n.closed {
		return
	}
	n.core.Step(sched.Reclaimed{Node: k, Res: r})
	n.step()
}
