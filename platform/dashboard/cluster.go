package dashboard

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gray-ml/gray/runtime/state"
)

// clusterRoutes serves the cluster view's data when the dashboard was
// given a cluster (Options.Cluster): /api/cluster/info says whether it
// was, /api/cluster/{kind} lists nodes, jobs, actors or tasks as
// `gray list --json` does, with the same filters (filter=key=value,
// repeatable) and limit.
func (s *Server) clusterRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/cluster/info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"cluster": s.opts.Cluster != nil, "kinds": state.Kinds})
	})
	mux.HandleFunc("GET /api/cluster/{kind}", s.apiCluster)
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
