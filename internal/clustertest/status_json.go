package clustertest

import (
	"encoding/json"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// statusKeys is `gray status --json` as printed (snake_case keys, see
// docs/cluster.md); DecodeStatus turns it into a Status.
type statusKeys struct {
	Address        string            `json:"address"`
	NodesAlive     int               `json:"nodes_alive"`
	NodesDead      int               `json:"nodes_dead"`
	ResourcesTotal state.Resources   `json:"resources_total"`
	ResourcesUsed  state.Resources   `json:"resources_used"`
	StoreUsed      int64             `json:"object_store_used_bytes"`
	StoreCapacity  int64             `json:"object_store_capacity_bytes"`
	Tasks          int               `json:"tasks"`
	Actors         int               `json:"actors"`
	Workers        int               `json:"workers"`
	Waiting        []state.Resources `json:"waiting"`
	Nodes          []struct {
		state.NodeRow
		ResourcesUsed state.Resources   `json:"resources_used"`
		Tasks         int               `json:"tasks"`
		Actors        int               `json:"actors"`
		Waiting       []state.Resources `json:"waiting"`
	} `json:"nodes"`
	Jobs []struct {
		state.JobRow
		Load *struct {
			Nodes []struct {
				NodeID  string          `json:"node_id"`
				Granted state.Resources `json:"resources_granted"`
				Used    state.Resources `json:"resources_used"`
				Tasks   int             `json:"tasks"`
				Actors  int             `json:"actors"`
			} `json:"nodes"`
			Waiting   []state.Resources `json:"waiting"`
			UpdatedAt time.Time         `json:"updated_at"`
		} `json:"load"`
	} `json:"jobs"`
}

func res(r state.Resources) task.Resources {
	out := task.Resources{CPU: r["CPU"], GPU: r["GPU"]}
	for k, v := range r {
		if k != "CPU" && k != "GPU" {
			if out.Custom == nil {
				out.Custom = map[string]float64{}
			}
			out.Custom[k] = v
		}
	}
	return out
}

func resList(rs []state.Resources) []task.Resources {
	var out []task.Resources
	for _, r := range rs {
		out = append(out, res(r))
	}
	return out
}

func when(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// DecodeStatus reads `gray status --json`.
func DecodeStatus(b []byte) (Status, error) {
	var k statusKeys
	if err := json.Unmarshal(b, &k); err != nil {
		return Status{}, err
	}
	st := Status{Address: k.Address, Alive: k.NodesAlive, Dead: k.NodesDead, Total: res(k.ResourcesTotal), Used: res(k.ResourcesUsed),
		StoreUsed: k.StoreUsed, StoreCapacity: k.StoreCapacity, Tasks: k.Tasks, Actors: k.Actors, Workers: k.Workers,
		Waiting: resList(k.Waiting)}
	for _, n := range k.Nodes {
		st.Nodes = append(st.Nodes, NodeStatus{ID: n.NodeID, IP: n.IP, NodeAddr: n.NodeAddress, ObjectAddr: n.ObjectAddress,
			Head: n.IsHead, Alive: n.State == "alive", Death: n.DeathReason, Resources: res(n.Resources), Used: res(n.ResourcesUsed),
			Leased: res(n.Leased), StoreUsed: n.StoreUsedBytes, StoreCapacity: n.StoreCapacityBytes, Tasks: n.Tasks, Actors: n.Actors,
			Workers: n.Workers, Waiting: resList(n.Waiting), Heartbeat: when(n.HeartbeatAt), Started: when(n.StartedAt)})
	}
	for _, j := range k.Jobs {
		ji := control.JobInfo{ID: j.JobID, Driver: j.Driver, Node: j.DriverNodeID, Started: when(j.StartedAt), Ended: when(j.EndedAt),
			Submitted: j.TasksSubmitted, Finished: j.TasksFinished, Failed: j.TasksFailed, Dropped: j.EventsDropped, Evicted: j.TasksEvicted}
		if l := j.Load; l != nil {
			ji.Load = &control.JobLoad{Waiting: resList(l.Waiting), Updated: l.UpdatedAt}
			for _, u := range l.Nodes {
				ji.Load.Nodes = append(ji.Load.Nodes, control.JobNodeLoad{Node: u.NodeID, Granted: res(u.Granted), Used: res(u.Used),
					Tasks: u.Tasks, Actors: u.Actors})
			}
		}
		st.Jobs = append(st.Jobs, ji)
	}
	return st, nil
}
