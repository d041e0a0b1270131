package dashboard

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// floats encodes as a JSON array with null for NaN and infinities, which
// JSON cannot hold.
type floats []float64

// MarshalJSON implements json.Marshaler.
func (f floats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(f)*8)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNum(b, v)
	}
	return append(b, ']'), nil
}

func appendNum(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// num is v for JSON: nil when it is not finite or absent.
func num(m map[string]float64, key string) *float64 {
	v, ok := m[key]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		// The client went away or v holds something JSON cannot; neither
		// can be reported to it now.
		return
	}
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	http.Error(w, "dashboard: "+fmt.Sprintf(format, args...), http.StatusBadRequest)
}

// current locks the index, brings it up to date and returns the unlock.
func (s *Server) current() func() {
	s.idx.mu.Lock()
	s.idx.current(time.Now())
	return s.idx.mu.Unlock
}

func (s *Server) apiInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{
		"logdir":  s.root,
		"metric":  s.opts.Metric,
		"runtime": s.opts.Runtime != nil,
	})
}

// runRow is a line of the runs table.
type runRow struct {
	ID        string   `json:"id"`
	Exp       string   `json:"exp"`
	Name      string   `json:"name"`
	Status    string   `json:"status"`
	Iter      *float64 `json:"iter"`
	Timesteps *float64 `json:"timesteps"`
	Metric    *float64 `json:"metric"`
	Elapsed   *float64 `json:"elapsed"`
	Bad       int      `json:"bad"`
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	var re *regexp.Regexp
	if f := r.URL.Query().Get("filter"); f != "" {
		var err error
		if re, err = regexp.Compile(f); err != nil {
			badRequest(w, "filter %q is not a regular expression: %v", f, err)
			return
		}
	}
	unlock := s.current()
	defer unlock()
	if re != nil {
		writeJSON(w, s.runsList(re))
		return
	}
	// The page's own question (every run) is answered from what was
	// encoded for this version of the index.
	a, err := s.runsAnswer.cached(s.boot, s.idx.version, func() any { return s.runsList(nil) })
	if err != nil {
		http.Error(w, "dashboard: encoding the runs list: "+err.Error(), http.StatusInternalServerError)
		return
	}
	a.serve(w, r)
}

// runsList is /api/runs's answer: the runs whose ID re matches (all when
// re is nil). The caller holds the index's lock.
func (s *Server) runsList(re *regexp.Regexp) map[string]any {
	now := time.Now()
	trialStatus := s.trialStatuses()
	rows := make([]runRow, 0, len(s.idx.runOrder))
	for _, run := range s.idx.runOrder {
		if re != nil && !re.MatchString(run.id) {
			continue
		}
		st := run.status(now)
		if ts, ok := trialStatus[run.dir]; ok {
			st = ts
		}
		rows = append(rows, runRow{
			ID: run.id, Exp: run.exp, Name: run.name, Status: st,
			Iter: num(run.last, "training_iteration"), Timesteps: num(run.last, "timesteps_total"),
			Metric: num(run.last, s.opts.Metric), Elapsed: num(run.last, "time_total_s"), Bad: run.bad,
		})
	}
	return map[string]any{"version": s.idx.version, "metric": s.opts.Metric, "runs": rows}
}

// trialStatuses maps trial folders to their status in their sweep's
// journal. The caller holds the index's lock.
func (s *Server) trialStatuses() map[string]string {
	out := map[string]string{}
	for _, sw := range s.idx.sweepOrder {
		for _, t := range sw.trials {
			out[t.dir] = t.status
		}
	}
	return out
}

// lookupRun finds a run by its ID. IDs are keys of the index, never
// joined to paths, so no ID reaches a file the index did not list.
func (s *Server) lookupRun(w http.ResponseWriter, id string) *run {
	run := s.idx.runs[id]
	if run == nil || !run.present() {
		// present: the folder may have gone, or been swapped for a link out
		// of the log dir, since the index last looked.
		http.Error(w, fmt.Sprintf("dashboard: no run %q under the log dir", id), http.StatusNotFound)
		return nil
	}
	return run
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	unlock := s.current()
	defer unlock()
	run := s.lookupRun(w, r.URL.Query().Get("id"))
	if run == nil {
		return
	}
	run.load()
	cfg, _ := readSmallFile(s.root, filepath.Join(run.dir, configFile), 1<<20)
	st := run.status(time.Now())
	if ts, ok := s.trialStatuses()[run.dir]; ok {
		st = ts
	}
	writeJSON(w, map[string]any{
		"id": run.id, "name": run.name, "exp": run.exp, "dir": run.dir, "status": st,
		"config": string(cfg), "keys": run.series.sortedKeys(), "keys_dropped": len(run.series.dropped),
		"results": run.series.n, "bad": run.bad, "version": s.idx.version,
	})
}

// safeFileName keeps the characters of a run's name that are safe in a
// download's file name.
func safeFileName(s string) string {
	out := strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			return c
		}
		return '_'
	}, s)
	if out == "" {
		return "run"
	}
	return out
}

// apiEvents streams server-sent events: "update" with a version number
// whenever what the pages show changed. Pages then fetch what they show.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "dashboard: streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	var sent uint64
	first := true
	for {
		unlock := s.current()
		v := s.idx.version
		unlock()
		if v != sent || first {
			if _, err := fmt.Fprintf(w, "event: update\ndata: %d\n\n", v); err != nil {
				return
			}
			fl.Flush()
			sent, first = v, false
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
