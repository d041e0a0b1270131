package cluster

import (
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Remote reaches the node daemons of a cluster for the driver's node
// (runtime/node): a Driver implements it. Its methods must not block; the
// node calls them under its lock.
type Remote interface {
	// StartWorker asks node k to start worker w of this driver, with env
	// added to its environment. The outcome comes back as a call of the
	// node's WorkerExited(w, why) when the worker ends or cannot start.
	StartWorker(k sched.NodeID, w sched.WorkerID, env []string)
	// StopWorker asks node k to kill worker w.
	StopWorker(k sched.NodeID, w sched.WorkerID)
}

// DriverNode makes the driver's node (runtime/node's Config.Cluster) the
// driver of a cluster job: how it reaches the other nodes, how their
// workers reach it, and what of the node on the driver's own machine it
// may use.
type DriverNode struct {
	Remote Remote
	// Objects moves objects between the nodes (cluster.Driver is one);
	// nil: none move, each stays where it was made (tests of scheduling).
	Objects objects.RemoteObjects
	Token   []byte // the cluster token: leased workers prove they hold it
	Listen  string // where leased workers connect, e.g. "127.0.0.1:0"
	// Advertise is the address workers dial (default: the listener's).
	Advertise string
	// Locations, if set, is told which nodes hold which objects (the
	// cluster's object-location table, for `gray status` and debugging).
	Locations objects.LocationTable
	// LocalCapacity, if set, is the most the driver's own node's grant
	// (the node's Config.Resources) can grow to: the resources of the
	// cluster's node on this machine (grant.go).
	LocalCapacity *task.Resources
	// LocalGPUs are the indices of the GPUs that node granted (the node's
	// Config.Resources' GPUs): with LocalCapacity set, the driver's own
	// node hands its tasks and actors only these, as other drivers may
	// hold the rest.
	LocalGPUs []int
}

// Capacity returns the most the driver's own node's grant can grow to:
// the cluster's node on this machine (LocalCapacity), else own, the
// resources the node was started with. c may be nil (no cluster).
func (c *DriverNode) Capacity(own task.Resources) task.Resources {
	if c != nil && c.LocalCapacity != nil {
		return *c.LocalCapacity
	}
	return own
}

// GPUs returns the GPU indices the driver's own node may hand out: a copy
// of those the cluster's node on this machine granted (LocalGPUs), else
// nil (0 up: all of them are this driver's). c may be nil (no cluster).
func (c *DriverNode) GPUs() []int {
	if c != nil && c.LocalCapacity != nil {
		return append([]int{}, c.LocalGPUs...)
	}
	return nil
}
