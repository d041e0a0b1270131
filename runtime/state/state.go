// Package state is a cluster's state API: the nodes, jobs, actors and
// tasks its Redis holds (runtime/control), as rows with stable snake_case
// JSON keys, filtered and limited. `gray list`, `gray status --json` and
// the dashboard read the cluster through it; docs/cluster.md lists every
// key. It also holds what one driver's scheduler shows of itself now
// (Snapshot, snapshot.go: gray.Snapshot, the dashboard's session page).
package state

import (
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
)

// Resources is an amount of resources keyed by resource name ("CPU",
// "GPU", custom names), zero amounts left out, as Ray's state API writes
// them.
type Resources map[string]float64

// ResourcesOf converts r.
func ResourcesOf(r task.Resources) Resources {
	out := Resources{}
	if r.CPU != 0 {
		out["CPU"] = r.CPU
	}
	if r.GPU != 0 {
		out["GPU"] = r.GPU
	}
	for k, v := range r.Custom {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// NodeRow is a node of the cluster.
type NodeRow struct {
	NodeID             string     `json:"node_id"`
	IP                 string     `json:"ip"`
	IsHead             bool       `json:"is_head"`
	State              string     `json:"state"` // alive or dead
	DeathReason        string     `json:"death_reason"`
	Resources          Resources  `json:"resources_total"`
	Leased             Resources  `json:"resources_leased"` // granted to drivers on other machines
	StoreUsedBytes     int64      `json:"object_store_used_bytes"`
	StoreCapacityBytes int64      `json:"object_store_capacity_bytes"`
	Workers            int        `json:"workers"`
	NodeAddress        string     `json:"node_address"`
	ObjectAddress      string     `json:"object_address"`
	StartedAt          *time.Time `json:"started_at"`
	HeartbeatAt        *time.Time `json:"heartbeat_at"`
}

// JobRow is a job: one driver's session on the cluster.
type JobRow struct {
	JobID          string     `json:"job_id"`
	Driver         string     `json:"driver"`
	DriverNodeID   string     `json:"driver_node_id"`
	State          string     `json:"state"` // running or ended
	TasksSubmitted uint64     `json:"tasks_submitted"`
	TasksFinished  uint64     `json:"tasks_finished"` // failed ones included
	TasksFailed    uint64     `json:"tasks_failed"`
	EventsDropped  uint64     `json:"events_dropped"`
	TasksEvicted   uint64     `json:"tasks_evicted"`
	StartedAt      *time.Time `json:"started_at"`
	EndedAt        *time.Time `json:"ended_at"`
}

// ActorRow is an actor.
type ActorRow struct {
	ActorID     string     `json:"actor_id"`
	JobID       string     `json:"job_id"`
	ClassName   string     `json:"class_name"`
	NodeID      string     `json:"node_id"`
	State       string     `json:"state"` // pending, alive, restarting or dead
	Restarts    int        `json:"restarts"`
	DeathReason string     `json:"death_reason"`
	CreatedAt   *time.Time `json:"created_at"`
	EndedAt     *time.Time `json:"ended_at"`
}

// TaskRow is a task.
type TaskRow struct {
	TaskID       string     `json:"task_id"`
	JobID        string     `json:"job_id"`
	Name         string     `json:"name"`
	Type         string     `json:"type"` // function, actor_creation or actor_method
	ActorID      string     `json:"actor_id"`
	NodeID       string     `json:"node_id"`
	State        string     `json:"state"` // submitted, running, finished or failed
	ErrorMessage string     `json:"error_message"`
	SubmittedAt  *time.Time `json:"submitted_at"`
	StartedAt    *time.Time `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at"`
}

func stamp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// NodeRowOf converts the node table's record.
func NodeRowOf(n control.NodeInfo) NodeRow {
	state := "alive"
	if !n.Alive {
		state = "dead"
	}
	return NodeRow{
		NodeID: n.ID, IP: n.IP, IsHead: n.Head, State: state, DeathReason: n.Death,
		Resources: ResourcesOf(n.Resources), Leased: ResourcesOf(n.Load.Used),
		StoreUsedBytes: n.Load.StoreUsed, StoreCapacityBytes: n.Load.StoreCapacity, Workers: n.Load.Workers,
		NodeAddress: n.NodeAddr, ObjectAddress: n.ObjectAddr, StartedAt: stamp(n.Started), HeartbeatAt: stamp(n.Heartbeat),
	}
}

// JobRowOf converts the job table's record.
func JobRowOf(j control.JobInfo) JobRow {
	state := "running"
	if !j.Ended.IsZero() {
		state = "ended"
	}
	return JobRow{
		JobID: j.ID, Driver: j.Driver, DriverNodeID: j.Node, State: state,
		TasksSubmitted: j.Submitted, TasksFinished: j.Finished, TasksFailed: j.Failed,
		EventsDropped: j.Dropped, TasksEvicted: j.Evicted, StartedAt: stamp(j.Started), EndedAt: stamp(j.Ended),
	}
}

func actorRowOf(a control.ActorEntry) ActorRow {
	return ActorRow{
		ActorID: a.ID, JobID: a.Job, ClassName: a.Class, NodeID: a.Node, State: string(a.State),
		Restarts: a.Restarts, DeathReason: a.Death, CreatedAt: stamp(a.Created), EndedAt: stamp(a.Ended),
	}
}

func taskRowOf(t control.TaskEntry) TaskRow {
	return TaskRow{
		TaskID: t.ID, JobID: t.Job, Name: t.Function, Type: t.Kind, ActorID: t.Actor, NodeID: t.Node,
		State: string(t.State), ErrorMessage: t.Error,
		SubmittedAt: stamp(t.Submitted), StartedAt: stamp(t.Started), EndedAt: stamp(t.Ended),
	}
}
