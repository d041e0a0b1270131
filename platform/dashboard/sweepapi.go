package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
)

// sweepRow is a line of the sweeps list.
type sweepRow struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Metric    string         `json:"metric"`
	Mode      string         `json:"mode"`
	Scheduler string         `json:"scheduler"`
	Searcher  string         `json:"searcher"`
	Trials    int            `json:"trials"`
	States    map[string]int `json:"states"`
}

func (s *Server) apiSweeps(w http.ResponseWriter, r *http.Request) {
	unlock := s.current()
	defer unlock()
	rows := make([]sweepRow, 0, len(s.idx.sweepOrder))
	for _, sw := range s.idx.sweepOrder {
		row := sweepRow{
			ID: sw.id, Name: sw.meta.Name, Metric: s.sweepMetric(sw), Mode: sw.meta.Mode,
			Scheduler: typeName(sw.meta.Scheduler), Searcher: typeName(sw.meta.Searcher), Trials: len(sw.trials), States: map[string]int{},
		}
		for _, t := range sw.trials {
			row.States[t.status]++
		}
		rows = append(rows, row)
	}
	writeJSON(w, map[string]any{"version": s.idx.version, "sweeps": rows})
}

func (s *Server) sweepMetric(sw *sweep) string {
	if sw.meta.Metric != "" {
		return sw.meta.Metric
	}
	return s.opts.Metric
}

// trialRow is a line of a sweep's trial table.
type trialRow struct {
	ID         string         `json:"id"`
	Status     string         `json:"status"`
	Params     map[string]any `json:"params"`
	Metric     *float64       `json:"metric"`
	Iter       *float64       `json:"iter"`
	Reason     string         `json:"reason"`
	Run        string         `json:"run"`
	Checkpoint string         `json:"checkpoint"`
}

func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	unlock := s.current()
	defer unlock()
	sw := s.idx.sweeps[id]
	if sw == nil {
		http.Error(w, fmt.Sprintf("dashboard: no sweep %q under the log dir", id), http.StatusNotFound)
		return
	}
	metric := s.sweepMetric(sw)
	byDir := map[string]*run{}
	for _, run := range s.idx.runOrder {
		byDir[run.dir] = run
	}
	flat := make([]map[string]any, len(sw.trials))
	for i, t := range sw.trials {
		flat[i] = map[string]any{}
		flattenConfig(flat[i], "", t.config)
	}
	params := searchedParams(flat)
	rows := make([]trialRow, len(sw.trials))
	lasts := make([]map[string]float64, len(sw.trials))
	maxIter := 0.0
	for i, t := range sw.trials {
		row := trialRow{ID: t.id, Status: t.status, Params: map[string]any{}}
		for _, p := range params {
			row.Params[p] = flat[i][p]
		}
		if run := byDir[t.dir]; run != nil {
			lasts[i] = run.last
			row.Run = run.id
			row.Metric = num(run.last, metric)
			row.Iter = num(run.last, "training_iteration")
			if row.Iter != nil {
				maxIter = math.Max(maxIter, *row.Iter)
			}
		}
		if n := len(t.checkpoints); n > 0 {
			row.Checkpoint = t.checkpoints[n-1]
		}
		rows[i] = row
	}
	for i, t := range sw.trials {
		rows[i].Reason = stopReason(sw, t, lasts[i], maxIter)
	}
	best := bestTrial(rows, sw.meta.Mode)
	writeJSON(w, map[string]any{
		"id": sw.id, "name": sw.meta.Name, "metric": metric, "mode": sw.meta.Mode,
		"scheduler": typeName(sw.meta.Scheduler), "searcher": typeName(sw.meta.Searcher), "ended": sw.ended,
		"params": params, "trials": rows, "best": best, "bad": sw.bad, "version": s.idx.version,
	})
}

// stopReason says why a trial is no longer running, as far as the files
// tell: its error, its last result meeting the stop criterion, the end of
// the sweep, an early stop by the scheduler (it stopped at fewer
// iterations than others reached), or completion.
func stopReason(sw *sweep, t *trial, last map[string]float64, maxIter float64) string {
	switch t.status {
	case "ERROR":
		msg, _, _ := strings.Cut(t.err, "\n")
		return fmt.Sprintf("error after %d failure(s): %s", t.failures, msg)
	case "TERMINATED":
	default:
		return ""
	}
	iter := last["training_iteration"]
	if met := metStop(sw.meta.Stop, last); met != "" {
		return fmt.Sprintf("met the stop criterion %s at iteration %g", met, iter)
	}
	sched := typeName(sw.meta.Scheduler)
	early := sched != "" && sched != "FIFO" && iter < maxIter
	switch {
	case early:
		return fmt.Sprintf("stopped early by %s at iteration %g (others reached %g)", sched, iter, maxIter)
	case sw.ended != "":
		return "sweep ended: " + sw.ended
	}
	return fmt.Sprintf("completed at iteration %g", iter)
}

// metStop names the first (by key) stop criterion the result reaches, as
// "key v ≥ target", or "" when it reaches none.
func metStop(stop map[string]float64, last map[string]float64) string {
	keys := make([]string, 0, len(stop))
	for k := range stop {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := last[k]; ok && v >= stop[k] {
			return fmt.Sprintf("%s %g ≥ %g", k, v, stop[k])
		}
	}
	return ""
}

// bestTrial is the trial with the best metric (mode "min" or max).
func bestTrial(rows []trialRow, mode string) *trialRow {
	var best *trialRow
	for i := range rows {
		m := rows[i].Metric
		if m == nil {
			continue
		}
		if best == nil || (mode == "min" && *m < *best.Metric) || (mode != "min" && *m > *best.Metric) {
			best = &rows[i]
		}
	}
	return best
}

func flattenConfig(out map[string]any, prefix string, m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flattenConfig(out, prefix+k+"/", sub)
			continue
		}
		out[prefix+k] = v
	}
}

// searchedParams lists, sorted, the config keys whose values differ
// between trials: the hyperparameters the sweep searched. A sweep of one
// trial shows all of its keys.
func searchedParams(configs []map[string]any) []string {
	seen := map[string]string{}
	varies := map[string]bool{}
	for _, c := range configs {
		for k, v := range c {
			b, _ := json.Marshal(v)
			if prev, ok := seen[k]; ok && prev != string(b) {
				varies[k] = true
			}
			seen[k] = string(b)
		}
	}
	var out []string
	for k := range seen {
		if varies[k] || len(configs) == 1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// typeName drops the Go package and pointer marks of a recorded type
// name: "*tune.ASHA" is "ASHA".
func typeName(s string) string {
	s = strings.TrimLeft(s, "*")
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
