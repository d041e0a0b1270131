package dashboard

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/machine"
	"github.com/gray-ml/gray/runtime/state"
)

// ClusterReader is what the cluster view reads from a cluster's control
// store: the state API's tables, and the nodes' machine histories.
type ClusterReader interface {
	state.Reader
	NodeHistories(ctx context.Context, ids []string) (map[string][]machine.Sample, error)
}

// clusterRoutes serves the cluster view's data when the dashboard was
// given a cluster (Options.Cluster): /api/cluster/info says whether it
// was, /api/cluster/{kind} lists nodes, jobs, actors or tasks as
// `gray list --json` does, with the same filters (filter=key=value,
// repeatable) and limit.
func (s *Server) clusterRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/cluster/info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"cluster": s.opts.Cluster != nil, "kinds": state.Kinds})
	})
	mux.HandleFunc("GET /api/cluster/history", s.apiClusterHistory)
	mux.HandleFunc("GET /api/cluster/{kind}", s.apiCluster)
}

// apiClusterHistory answers /api/cluster/history: each node's CPU and
// memory samples of the last hour, as its heartbeats left them in the
// cluster's Redis (the shape of /api/runtime/history). Nodes alive come
// first; a dead node's last hour stays until its entry expires.
func (s *Server) apiClusterHistory(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cluster == nil {
		http.Error(w, "dashboard: no cluster to show: start it with gray dashboard --cluster ADDRESS", http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	nodes, err := s.opts.Cluster.Nodes(ctx)
	if err != nil {
		http.Error(w, "dashboard: reading the cluster: "+err.Error(), http.StatusBadGateway)
		return
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Alive && !nodes[j].Alive })
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	hist, err := s.opts.Cluster.NodeHistories(ctx, ids)
	if err != nil {
		http.Error(w, "dashboard: reading the cluster: "+err.Error(), http.StatusBadGateway)
		return
	}
	type node struct {
		Name    string           `json:"name"`
		Alive   bool             `json:"alive"`
		Samples []machine.Sample `json:"samples"`
	}
	out := make([]node, 0, len(nodes))
	for _, n := range nodes {
		smp := hist[n.ID]
		if smp == nil {
			smp = []machine.Sample{} // an older node sends none; the page says so
		}
		out = append(out, node{Name: n.ID, Alive: n.Alive, Samples: smp})
	}
	writeJSON(w, map[string]any{"every_ms": control.MachineSampleEvery.Milliseconds(), "span_s": int(control.MachineHistorySpan.Seconds()), "nodes": out})
}

// clusterList is what /api/cluster/{kind} answers.
type clusterList struct {
	Kind    string   `json:"kind"`
	Keys    []string `json:"keys"`
	Rows    []any    `json:"rows"`
	Matched int      `json:"matched"`
	Notes   []string `json:"notes"`
}

func (s *Server) apiCluster(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cluster == nil {
		http.Error(w, "dashboard: no cluster to show: start it with gray dashboard --cluster ADDRESS", http.StatusNotFound)
		return
	}
	kind := r.PathValue("kind")
	q := r.URL.Query()
	filters, err := state.ParseFilters(kind, q["filter"])
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	limit := 500
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			badRequest(w, "limit %q is not a number of rows (0: all)", v)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	res, err := state.List(ctx, s.opts.Cluster, kind, filters, limit)
	if err != nil {
		http.Error(w, "dashboard: reading the cluster: "+err.Error(), http.StatusBadGateway)
		return
	}
	notes := res.Notes
	if notes == nil {
		notes = []string{}
	}
	writeJSON(w, clusterList{Kind: kind, Keys: state.Keys(kind), Rows: res.Rows, Matched: res.Matched, Notes: notes})
}
