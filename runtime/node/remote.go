package node

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
)

// Workers on other nodes of a cluster.
//
// The driver's node schedules for the whole job (sched.Cluster keeps a
// pool per node). A Spawn or StartActor effect for another node becomes a
// lease: cluster.Remote.StartWorker asks that node's daemon to start the program as
// worker w. The worker connects back over TCP (the cluster token proves it
// may) and from then on is an ordinary worker of this node. Its objects
// travel inline over its connection: arguments and Get replies carry the
// bytes of shared objects, and its large results (encoded zero-copy by the
// worker) are copied into this node's shared-memory store, so the driver's
// Get of them stays zero-copy.

// remoteState is the node's part of a cluster; nil without one.
type remoteState struct {
	cfg  cluster.DriverNode
	addr string // what workers dial
}

// listenTCP starts the listener for leased workers.
func (n *Node) listenTCP() error {
	c := n.cfg.Cluster
	ln, err := transfer.Listen(c.Listen, c.Token)
	if err != nil {
		return fmt.Errorf("gray: listening for the cluster's workers on %s: %w", c.Listen, err)
	}
	addr := c.Advertise
	if addr == "" {
		addr = ln.Addr().String()
	}
	n.remote = &remoteState{cfg: *c, addr: addr}
	// The driver's objects are served to other nodes from the host its
	// workers reach (objects.Keeper.StartTransfer).
	if err := n.ob.StartTransfer(objects.Transfer{Workers: addr, Token: c.Token, Remote: c.Objects, Locations: c.Locations}); err != nil {
		ln.Close()
		return err
	}
	n.pool.Listen(ln)
	return nil
}

// WorkerAddress returns where leased workers connect ("" outside a cluster).
func (n *Node) WorkerAddress() string {
	if n.remote == nil {
		return ""
	}
	return n.remote.addr
}

// AddNode adds node k (name for messages) with the resources this job may
// use there; tasks spill to it when the local node is full.
func (n *Node) AddNode(k sched.NodeID, name string, res task.Resources) error {
	return n.addNode(k, name, res, nil, res)
}

func (n *Node) addNode(k sched.NodeID, name string, res task.Resources, gpus []int, capacity task.Resources) error {
	n.mu.Lock()
	defer n.unlock()
	if n.remote == nil {
		return fmt.Errorf("gray: adding node %s: this session is not connected to a cluster", name)
	}
	if n.closed {
		return ErrShutdown
	}
	if err := n.core.AddNodeGrant(k, res, gpus, capacity); err != nil {
		return err
	}
	n.rec.Step(recovery.NodeAdded{Node: k, Name: name})
	n.step()
	return nil
}

// NodeGone drops node k: its workers are gone, the tasks they ran or held
// run again elsewhere (up to recovery.DefaultRuns times each), its actors die with
// why.
func (n *Node) NodeGone(k sched.NodeID, why string) {
	n.mu.Lock()
	if n.remote == nil || n.closed || n.rec.Name(k) == "" && n.core.Node(k) == nil {
		n.unlock()
		return
	}
	name := n.rec.Name(k)
	n.gone = &recovery.TaskLost[*pending]{Why: fmt.Sprintf("node %s died (%s)", name, why)}
	// The core forgets the node first, so that no rebuild the recovery
	// core starts below is placed there. Its tasks and actors come back as
	// Orphan and OrphanActor effects (nothing else is pending: every event
	// ends with step), carried out once the recovery core knows what the
	// node's death lost: its copies are gone, and what only it held is
	// lost (or rebuilt when next needed), so the tasks run again fetch it
	// again; the location table forgets the node last (ForgetNode).
	n.core.Step(sched.NodeRemoved{Node: k})
	orphans := n.core.Effects()
	n.recover(recovery.NodeGone{Node: k, Why: why})
	for _, e := range orphans {
		n.apply(e)
	}
	var conns []*proc
	for _, w := range n.workers {
		if w.node == k {
			conns = append(conns, w)
		}
	}
	n.step()
	n.gone = nil
	n.unlock()
	for _, w := range conns {
		n.pool.Abort(w.Worker)
	}
	n.flushErrors()
}

// checkRetries reports a run count kept for a task that is no longer
// queued, sent to a worker or waiting for an argument (it ended: the count
// leaked). For tests (Check): it visits every live task.
func (n *Node) checkRetries() error {
	if n.rec.RunsKept() == 0 {
		return nil
	}
	live := map[*pending]bool{}
	n.core.EachTask(func(p *pending) { live[p] = true })
	n.ob.EachWaiting(func(p *pending) { live[p] = true })
	return n.rec.Check(func(p *pending) bool { return live[p] }, func(p *pending) string { return fmt.Sprintf("%s (%s)", p.spec.ID, p.spec.Func) })
}

// WorkerExited reports the end of remote worker w (or that it could not
// start: why says so).
func (n *Node) WorkerExited(w sched.WorkerID, why error) {
	n.mu.Lock()
	x := n.workers[w]
	n.unlock()
	if x != nil {
		n.pool.Exited(x.Worker, why)
	}
}

// Waiting returns the requests no node of the cluster can hold now, which
// wait for one that can to join.
func (n *Node) Waiting() []task.Resources {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Waiting()
}

// Stalled returns what actors wait for that only a node joining or an
// actor ending can give them (sched.Stall); false when none waits so.
func (n *Node) Stalled() (sched.Stall, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Stalled()
}
