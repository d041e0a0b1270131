package main

import (
	"time"

	"github.com/gray-ml/gray/runtime/state"
	"github.com/gray-ml/gray/runtime/task"
)

// statusJSON is what `gray status --json` prints: stable snake_case keys,
// every one listed in docs/cluster.md. Resources are keyed by resource
// name ("CPU", "GPU", custom names), as Ray writes them.
type statusJSON struct {
	Address            string            `json:"address"`
	NodesAlive         int               `json:"nodes_alive"`
	NodesDead          int               `json:"nodes_dead"`
	ResourcesTotal     state.Resources   `json:"resources_total"`
	ResourcesUsed      state.Resources   `json:"resources_used"`
	StoreUsedBytes     int64             `json:"object_store_used_bytes"`
	StoreCapacityBytes int64             `json:"object_store_capacity_bytes"`
	Tasks              int               `json:"tasks"`
	Actors             int               `json:"actors"`
	Workers            int               `json:"workers"`
	Waiting            []state.Resources `json:"waiting"`
	Nodes              []nodeStatusJSON  `json:"nodes"`
	Jobs               []jobStatusJSON   `json:"jobs"`
}

// jobStatusJSON is a job's line of `gray status --json`: the job row of
// `gray list jobs` with what its driver last published it runs where
// (null once it ended or stopped publishing).
type jobStatusJSON struct {
	state.JobRow
	Load *jobLoadJSON `json:"load"`
}

type jobLoadJSON struct {
	Nodes     []jobNodeJSON     `json:"nodes"`
	Waiting   []state.Resources `json:"waiting"`
	UpdatedAt time.Time         `json:"updated_at"`
}

type jobNodeJSON struct {
	NodeID  string          `json:"node_id"`
	Granted state.Resources `json:"resources_granted"`
	Used    state.Resources `json:"resources_used"`
	Tasks   int             `json:"tasks"`
	Actors  int             `json:"actors"`
}

// nodeStatusJSON is a node's line of `gray status --json`: the node row
// of `gray list nodes` with what the running jobs hold there.
type nodeStatusJSON struct {
	state.NodeRow
	ResourcesUsed state.Resources   `json:"resources_used"`
	Tasks         int               `json:"tasks"`
	Actors        int               `json:"actors"`
	Waiting       []state.Resources `json:"waiting"`
}

func statusJSONOf(st *clusterStatus) statusJSON {
	out := statusJSON{
		Address: st.Address, NodesAlive: st.Alive, NodesDead: st.Dead,
		ResourcesTotal: state.ResourcesOf(st.Total), ResourcesUsed: state.ResourcesOf(st.Used),
		StoreUsedBytes: st.StoreUsed, StoreCapacityBytes: st.StoreCapacity,
		Tasks: st.Tasks, Actors: st.Actors, Workers: st.Workers,
		Waiting: resourcesList(st.Waiting), Nodes: []nodeStatusJSON{}, Jobs: []jobStatusJSON{},
	}
	for _, n := range st.Nodes {
		row := state.NodeRowOf(n.info)
		out.Nodes = append(out.Nodes, nodeStatusJSON{NodeRow: row, ResourcesUsed: state.ResourcesOf(n.Used),
			Tasks: n.Tasks, Actors: n.Actors, Waiting: resourcesList(n.Waiting)})
	}
	for _, j := range st.Jobs {
		js := jobStatusJSON{JobRow: state.JobRowOf(j)}
		if l := j.Load; l != nil {
			js.Load = &jobLoadJSON{Nodes: []jobNodeJSON{}, Waiting: resourcesList(l.Waiting), UpdatedAt: l.Updated.UTC()}
			for _, u := range l.Nodes {
				js.Load.Nodes = append(js.Load.Nodes, jobNodeJSON{NodeID: u.Node, Granted: state.ResourcesOf(u.Granted),
					Used: state.ResourcesOf(u.Used), Tasks: u.Tasks, Actors: u.Actors})
			}
		}
		out.Jobs = append(out.Jobs, js)
	}
	return out
}

func resourcesList(rs []task.Resources) []state.Resources {
	out := make([]state.Resources, len(rs))
	for i, r := range rs {
		out[i] = state.ResourcesOf(r)
	}
	return out
}
