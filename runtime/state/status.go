package state

import (
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

// Status is what `gray status --json` prints: stable snake_case keys,
// every one listed in docs/cluster.md. Resources are keyed by resource
// name ("CPU", "GPU", custom names), as Ray writes them. It is defined
// once here so that the command and the tools reading it agree.
type Status struct {
	Address string `json:"address"`
	// ReadAt is when the command read the cluster's tables: what follows
	// is the cluster as of then, however long the command took to print.
	ReadAt             time.Time    `json:"read_at"`
	NodesAlive         int          `json:"nodes_alive"`
	NodesDead          int          `json:"nodes_dead"`
	ResourcesTotal     Resources    `json:"resources_total"`
	ResourcesUsed      Resources    `json:"resources_used"`
	StoreUsedBytes     int64        `json:"object_store_used_bytes"`
	StoreCapacityBytes int64        `json:"object_store_capacity_bytes"`
	Tasks              int          `json:"tasks"`
	Actors             int          `json:"actors"`
	Workers            int          `json:"workers"`
	Waiting            []Resources  `json:"waiting"`
	Nodes              []NodeStatus `json:"nodes"`
	Jobs               []JobStatus  `json:"jobs"`
}

// NodeStatus is a node's line of Status: the node row of `gray list
// nodes` with what the running jobs hold there.
type NodeStatus struct {
	NodeRow
	ResourcesUsed Resources   `json:"resources_used"`
	Tasks         int         `json:"tasks"`
	Actors        int         `json:"actors"`
	Waiting       []Resources `json:"waiting"`
}

// JobStatus is a job's line of Status: the job row of `gray list jobs`
// with what its driver last published it runs where (nil once it ended
// or stopped publishing).
type JobStatus struct {
	JobRow
	Load *JobLoad `json:"load"`
}

// JobLoad is what a job's driver last published of its work.
type JobLoad struct {
	Nodes     []JobNode   `json:"nodes"`
	Waiting   []Resources `json:"waiting"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// JobNode is a job's share of one node.
type JobNode struct {
	NodeID  string    `json:"node_id"`
	Granted Resources `json:"resources_granted"`
	Used    Resources `json:"resources_used"`
	Tasks   int       `json:"tasks"`
	Actors  int       `json:"actors"`
}

// ResourcesList converts each of rs.
func ResourcesList(rs []task.Resources) []Resources {
	out := make([]Resources, len(rs))
	for i, r := range rs {
		out[i] = ResourcesOf(r)
	}
	return out
}

// Task converts r back (ResourcesOf's inverse).
func (r Resources) Task() task.Resources {
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

// TaskList converts each of rs back (nil for none).
func TaskList(rs []Resources) []task.Resources {
	var out []task.Resources
	for _, r := range rs {
		out = append(out, r.Task())
	}
	return out
}
