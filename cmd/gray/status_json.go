package main

import (
	"github.com/gray-ml/gray/runtime/state"
)

// statusJSONOf is what `gray status --json` prints of st (state.Status:
// stable snake_case keys, every one listed in docs/cluster.md).
func statusJSONOf(st *clusterStatus) state.Status {
	out := state.Status{
		Address: st.Address, ReadAt: st.ReadAt.UTC(), NodesAlive: st.Alive, NodesDead: st.Dead,
		ResourcesTotal: state.ResourcesOf(st.Total), ResourcesUsed: state.ResourcesOf(st.Used),
		StoreUsedBytes: st.StoreUsed, StoreCapacityBytes: st.StoreCapacity,
		Tasks: st.Tasks, Actors: st.Actors, Workers: st.Workers,
		Waiting: state.ResourcesList(st.Waiting), Nodes: []state.NodeStatus{}, Jobs: []state.JobStatus{},
	}
	for _, n := range st.Nodes {
		row := state.NodeRowOf(n.info)
		out.Nodes = append(out.Nodes, state.NodeStatus{NodeRow: row, ResourcesUsed: state.ResourcesOf(n.Used),
			Tasks: n.Tasks, Actors: n.Actors, Waiting: state.ResourcesList(n.Waiting)})
	}
	for _, j := range st.Jobs {
		js := state.JobStatus{JobRow: state.JobRowOf(j)}
		if l := j.Load; l != nil {
			js.Load = &state.JobLoad{Nodes: []state.JobNode{}, Waiting: state.ResourcesList(l.Waiting), UpdatedAt: l.Updated.UTC()}
			for _, u := range l.Nodes {
				js.Load.Nodes = append(js.Load.Nodes, state.JobNode{NodeID: u.Node, Granted: state.ResourcesOf(u.Granted),
					Used: state.ResourcesOf(u.Used), Tasks: u.Tasks, Actors: u.Actors})
			}
		}
		out.Jobs = append(out.Jobs, js)
	}
	return out
}
