package dashboard

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
)

// Limits of one /api/series answer.
const (
	// defaultPoints is how many points a series is downsampled to unless
	// the page asks otherwise: about two per pixel of a wide chart.
	defaultPoints = 2000
	// maxSeriesBytes bounds an answer's JSON; series past it are left out
	// and the answer says how many.
	maxSeriesBytes = 16 << 20
)

// seriesRun is one run's part of /api/series.
type seriesRun struct {
	ID     string                     `json:"id"`
	Name   string                     `json:"name"`
	N      int                        `json:"n"`
	Series map[string]json.RawMessage `json:"series"`
	// KeysDropped counts the keys past maxKeysPerRun the server does not keep.
	KeysDropped int `json:"keys_dropped"`
}

// seriesCut says what an answer left out to stay within maxSeriesBytes.
type seriesCut struct {
	Series int    `json:"series"`
	Reason string `json:"reason"`
}

// xColumn returns the x values of a run's results for the axis named x:
// a result key, or "wall" for seconds since the run's first result.
func xColumn(se *series, x string) []float64 {
	if x == "wall" {
		ts := se.column("timestamp")
		if ts == nil {
			return nil
		}
		first := math.NaN()
		for i, v := range ts {
			if math.IsNaN(first) && !math.IsNaN(v) {
				first = v
			}
			ts[i] = v - first
		}
		return ts
	}
	if col := se.column(x); col != nil {
		return col
	}
	if se.tf != nil {
		// Event files have steps, not iterations: a run of another tool
		// is drawn over its steps whatever result key the page asks for.
		if col := se.column(tfStepKey); col != nil {
			return col
		}
	}
	out := make([]float64, se.n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

// apiSeries answers /api/series?run=ID&run=ID&x=KEY&keys=REGEX&points=N:
// per run and key, the finite (x, y) points, downsampled to about N
// points (default defaultPoints; 0 is every point).
func (s *Server) apiSeries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ids := q["run"]
	if len(ids) == 0 {
		badRequest(w, "name at least one run: /api/series?run=ID")
		return
	}
	x := q.Get("x")
	if x == "" {
		x = "training_iteration"
	}
	want := defaultPoints
	if p := q.Get("points"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			badRequest(w, "points=%q is not a count of points (0 means all)", p)
			return
		}
		want = n
	}
	var keyRE *regexp.Regexp
	if k := q.Get("keys"); k != "" {
		var err error
		if keyRE, err = regexp.Compile(k); err != nil {
			badRequest(w, "keys %q is not a regular expression: %v", k, err)
			return
		}
	}
	unlock := s.current()
	defer unlock()
	out := make([]seriesRun, 0, len(ids))
	var cut *seriesCut
	steps := 0 // runs drawn over their event files' steps instead of x
	size := 0
	for _, id := range ids {
		run := s.lookupRun(w, id)
		if run == nil {
			return
		}
		run.load()
		se := run.series
		xs := xColumn(se, x)
		if se.tf != nil && x != "wall" && se.column(x) == nil {
			steps++
		}
		sr := seriesRun{ID: run.id, Name: run.name, N: se.n, Series: map[string]json.RawMessage{}, KeysDropped: len(se.dropped)}
		for _, k := range se.sortedKeys() {
			if keyRE != nil && !keyRE.MatchString(k) {
				continue
			}
			if cut != nil {
				cut.Series++
				continue
			}
			b, _ := json.Marshal(downsample(se.pairs(xs, k), want/2))
			if size+len(b) > maxSeriesBytes {
				cut = &seriesCut{Series: 1, Reason: "the answer reached its limit of " + strconv.Itoa(maxSeriesBytes>>20) + " MiB; narrow the names or the runs"}
				continue
			}
			size += len(b)
			sr.Series[k] = b
		}
		out = append(out, sr)
	}
	if steps == len(ids) {
		x = tfStepKey // say so, so that the axis is titled for what it shows
	}
	writeJSON(w, map[string]any{"x": x, "version": s.idx.version, "points": want, "runs": out, "cut": cut})
}

// apiCSV answers /api/csv?run=ID: every result of the run, one row each,
// with every key it logged, numbers and strings. It reads result.json as
// a stream, twice (once for the columns, once for the rows), and holds
// one line at a time.
func (s *Server) apiCSV(w http.ResponseWriter, r *http.Request) {
	unlock := s.current()
	run := s.lookupRun(w, r.URL.Query().Get("run"))
	if run == nil {
		unlock()
		return
	}
	name := safeFileName(run.name)
	if run.tf != nil {
		run.load()
		writeSeriesCSV(w, name, run.series)
		unlock()
		return
	}
	src := tailer{root: run.summary.root, path: run.summary.path}
	unlock()

	seen := map[string]bool{}
	var keys []string
	pass := src
	if _, err := pass.next(func(line []byte) {
		nums, strs, ok := parseResultAll(line)
		if !ok {
			return
		}
		for k := range nums {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		for k := range strs {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}); err != nil {
		http.Error(w, "dashboard: reading the run's results: "+err.Error(), http.StatusNotFound)
		return
	}
	sort.Strings(keys)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(keys)
	row := make([]string, len(keys))
	rows := 0
	// The second pass stops where the first did, so a run still writing
	// adds no row with columns the header lacks.
	end := pass.off
	pass = src
	pass.limit = end
	_, _ = pass.next(func(line []byte) {
		nums, strs, ok := parseResultAll(line)
		if !ok {
			return
		}
		for j, k := range keys {
			if v, ok := nums[k]; ok {
				row[j] = csvNumber(v)
			} else {
				row[j] = strs[k]
			}
		}
		_ = cw.Write(row)
		if rows++; rows%1024 == 0 {
			cw.Flush()
		}
	})
	cw.Flush()
}

// csvNumber writes v as spreadsheets read it back: integers in full
// (a Unix time stays 1795847230, not 1.79584723e+09), others in the
// shortest form that round-trips.
func csvNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == math.Trunc(v) && math.Abs(v) < 1e18:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1e-4 && math.Abs(v) < 1e18:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
