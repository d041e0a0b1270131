package dashboard

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gray-ml/gray/platform/runlog"
)

// Files of a run folder and of a Tune experiment folder the dashboard reads.
const (
	resultFile     = runlog.ResultFile
	configFile     = runlog.ConfigFile
	paramsFile     = runlog.ParamsFile
	experimentFile = "experiment.json"
	journalFile    = "journal.jsonl"
)

// Run statuses shown for runs outside a sweep (a sweep's trials take
// their status from the sweep's journal).
const (
	statusRunning    = "RUNNING"
	statusTerminated = "TERMINATED"
	statusStopped    = "STOPPED" // no new result for a while, never done
	statusPending    = "PENDING"
)

// activeWindow is how recently a run must have written a result to count
// as running when it has not reported done.
const activeWindow = 60 * time.Second

// run is one run folder under the log dir.
type run struct {
	id   string // path under the log dir, slash-separated: the run's only name in URLs
	dir  string // absolute
	exp  string // the experiment folder's name, "" for a run at the top
	name string // the folder's base name

	size  int64     // result.json's size when last looked at
	mtime time.Time // result.json's modification time
	last  map[string]float64
	done  bool
	bad   int // malformed result lines seen

	// series is nil until a chart asks for the run; then it is kept
	// current by tailing result.json.
	series *series
}

// series is a run's numeric results as columns: data[c][i] is key keys[c]
// of result i, NaN where result i lacks it.
type series struct {
	tail tailer
	keys []string
	col  map[string]int
	data [][]float64
	n    int
}

func newSeries(path string) *series {
	return &series{tail: tailer{path: path}, col: map[string]int{}}
}

// add appends one result.
func (s *series) add(flat map[string]float64) {
	for k, v := range flat {
		c, ok := s.col[k]
		if !ok {
			c = len(s.keys)
			s.col[k] = c
			s.keys = append(s.keys, k)
			col := make([]float64, s.n, s.n+16)
			for i := range col {
				col[i] = math.NaN()
			}
			s.data = append(s.data, col)
		}
		s.data[c] = append(s.data[c], v)
	}
	s.n++
	for c := range s.data {
		if len(s.data[c]) < s.n {
			s.data[c] = append(s.data[c], math.NaN())
		}
	}
}

func (s *series) reset() {
	s.keys, s.col, s.data, s.n = nil, map[string]int{}, nil, 0
}

// column returns key's values, nil when the run never logged it.
func (s *series) column(key string) []float64 {
	if c, ok := s.col[key]; ok {
		return s.data[c]
	}
	return nil
}

// lastResult reads the last whole, well-formed line of a result.json
// without reading the file from its start.
func lastResult(path string, size int64) (map[string]float64, bool, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	for _, window := range []int64{64 << 10, 4 << 20} {
		start := max(size-window, 0)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, false
		}
		// Drop a last line still being written.
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			buf = buf[:i]
		} else {
			buf = nil
		}
		for len(buf) > 0 {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 && start > 0 {
				break // the line may begin before the window
			}
			if flat, done, ok := parseResult(buf[i+1:]); ok {
				return flat, done, true
			}
			if i < 0 {
				break
			}
			buf = buf[:i]
		}
		if start == 0 {
			break
		}
	}
	return nil, false, false
}

// refresh brings r up to date with its result.json.
func (r *run) refresh() {
	path := filepath.Join(r.dir, resultFile)
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	if st.Size() == r.size && st.ModTime().Equal(r.mtime) {
		return
	}
	r.size, r.mtime = st.Size(), st.ModTime()
	if r.series != nil {
		r.load()
		return
	}
	if flat, done, ok := lastResult(path, r.size); ok {
		r.last, r.done = flat, done
	}
}

// load reads what result.json gained since the last load into r.series.
func (r *run) load() {
	if r.series == nil {
		r.series = newSeries(filepath.Join(r.dir, resultFile))
	}
	s := r.series
	reset, err := s.tail.next(func(line []byte) {
		flat, done, ok := parseResult(line)
		if !ok {
			if len(bytes.TrimSpace(line)) > 0 {
				r.bad++
			}
			return
		}
		s.add(flat)
		r.last, r.done = flat, done
	})
	if reset {
		// The file was rewritten (a trial restored from a checkpoint drops
		// later results): read it all again.
		s.reset()
		r.bad = 0
		s.tail = tailer{path: s.tail.path}
		r.load()
	}
	_ = err // a vanished file keeps what was read
}

// status is the run's state as the runs table shows it.
func (r *run) status(now time.Time) string {
	switch {
	case r.last == nil && r.size == 0:
		return statusPending
	case r.done:
		return statusTerminated
	case now.Sub(r.mtime) < activeWindow:
		return statusRunning
	}
	return statusStopped
}

// scanRuns lists the run folders under root: root itself, its children
// and its grandchildren that hold a result.json, never following a link
// out of root.
func scanRuns(root string) (runs []*runFolder, sweeps []*runFolder) {
	var visit func(dir, rel string, depth int)
	visit = func(dir, rel string, depth int) {
		if fileInside(root, filepath.Join(dir, resultFile)) {
			runs = append(runs, &runFolder{dir: dir, rel: rel})
		}
		if depth == 2 {
			return
		}
		if fileInside(root, filepath.Join(dir, experimentFile)) {
			sweeps = append(sweeps, &runFolder{dir: dir, rel: rel})
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "checkpoint_") || name == "logs" {
				continue
			}
			if !e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				continue
			}
			child := filepath.Join(dir, name)
			if !dirInside(root, child) {
				continue
			}
			visit(child, joinRel(rel, name), depth+1)
		}
	}
	visit(root, "", 0)
	sort.Slice(runs, func(i, j int) bool { return runs[i].rel < runs[j].rel })
	sort.Slice(sweeps, func(i, j int) bool { return sweeps[i].rel < sweeps[j].rel })
	return runs, sweeps
}

// runFolder is a folder scanRuns found.
type runFolder struct{ dir, rel string }

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// dirInside reports whether path is a folder whose real location (links
// resolved) is root or below it.
func dirInside(root, path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !within(root, real) {
		return false
	}
	st, err := os.Stat(real)
	return err == nil && st.IsDir()
}

// fileInside reports whether path is a regular file whose real location
// is below root.
func fileInside(root, path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !within(root, real) {
		return false
	}
	st, err := os.Stat(real)
	return err == nil && st.Mode().IsRegular()
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readSmallFile reads a file below root of at most limit bytes.
func readSmallFile(root, path string, limit int64) ([]byte, bool) {
	if !fileInside(root, path) {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	return b, err == nil
}
