package clustertest

import (
	"encoding/json"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/state"
)

func when(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// DecodeStatus reads `gray status --json`.
func DecodeStatus(b []byte) (Status, error) {
	var k state.Status
	if err := json.Unmarshal(b, &k); err != nil {
		return Status{}, err
	}
	st := Status{Address: k.Address, ReadAt: k.ReadAt, Alive: k.NodesAlive, Dead: k.NodesDead, Total: k.ResourcesTotal.Task(), Used: k.ResourcesUsed.Task(),
		StoreUsed: k.StoreUsedBytes, StoreCapacity: k.StoreCapacityBytes, Tasks: k.Tasks, Actors: k.Actors, Workers: k.Workers,
		Waiting: state.TaskList(k.Waiting)}
	for _, n := range k.Nodes {
		st.Nodes = append(st.Nodes, NodeStatus{ID: n.NodeID, IP: n.IP, NodeAddr: n.NodeAddress, ObjectAddr: n.ObjectAddress,
			Head: n.IsHead, Alive: n.State == "alive", Death: n.DeathReason, Resources: n.Resources.Task(), Used: n.ResourcesUsed.Task(),
			Leased: n.Leased.Task(), StoreUsed: n.StoreUsedBytes, StoreCapacity: n.StoreCapacityBytes, Tasks: n.Tasks, Actors: n.Actors,
			Workers: n.Workers, Waiting: state.TaskList(n.Waiting), Heartbeat: when(n.HeartbeatAt), Started: when(n.StartedAt)})
	}
	for _, j := range k.Jobs {
		ji := control.JobInfo{ID: j.JobID, Driver: j.Driver, Node: j.DriverNodeID, Started: when(j.StartedAt), Ended: when(j.EndedAt),
			Submitted: j.TasksSubmitted, Finished: j.TasksFinished, Failed: j.TasksFailed, Dropped: j.EventsDropped, Evicted: j.TasksEvicted}
		if l := j.Load; l != nil {
			ji.Load = &control.JobLoad{Waiting: state.TaskList(l.Waiting), Updated: l.UpdatedAt}
			for _, u := range l.Nodes {
				ji.Load.Nodes = append(ji.Load.Nodes, control.JobNodeLoad{Node: u.NodeID, Granted: u.Granted.Task(), Used: u.Used.Task(),
					Tasks: u.Tasks, Actors: u.Actors})
			}
		}
		st.Jobs = append(st.Jobs, ji)
	}
	return st, nil
}
