package dashboard

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
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
	bad   int    // malformed result lines seen
	shown string // status(now) at the index's last look

	// summary follows result.json for the runs table: the last result
	// and the count of malformed lines, holding nothing else.
	summary tailer
	// series is nil until a chart asks for the run; then it is kept
	// current by tailing result.json.
	series *series
	// tf, for a run with no result.json, follows its folder's event files
	// (written by TensorBoard writers) in place of summary.
	tf *tfSource
}

func newRun(root, dir, id string) *run {
	return &run{id: id, dir: dir, name: baseName(id), exp: parentName(id),
		summary: tailer{root: root, path: filepath.Join(dir, resultFile)}}
}

// newTFRun is a run read from the event files of dir.
func newTFRun(root, dir, id string) *run {
	r := newRun(root, dir, id)
	r.tf = newTFSource(root, dir)
	return r
}

// present reports whether the run's result.json (or, for a run read from
// event files, its folder) still exists inside the log dir (links are
// resolved on every look, not only when indexing).
func (r *run) present() bool {
	if r.tf != nil {
		return dirInside(r.tf.root, r.dir) && hasEventFiles(r.tf.root, r.dir)
	}
	return fileInside(r.summary.root, r.summary.path)
}

// refresh brings r up to date with its result.json. It reports false
// when the file is gone or no longer inside the log dir.
func (r *run) refresh() bool {
	if r.tf != nil {
		return r.refreshTF()
	}
	path := r.summary.path
	st, ok := statInside(r.summary.root, path)
	if !ok || !st.Mode().IsRegular() {
		return false
	}
	if st.Size() == r.size && st.ModTime().Equal(r.mtime) {
		return true
	}
	r.size, r.mtime = st.Size(), st.ModTime()
	// Every new line is checked (json.Valid, no allocation) to count the
	// malformed ones; only the last good one is decoded.
	var good []byte
	reset, _ := r.summary.next(func(line []byte) {
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0:
		case line[0] == '{' && (json.Valid(line) || nonFiniteResult(line)):
			good = append(good[:0], line...)
		default:
			r.bad++
		}
	})
	if good != nil {
		if flat, done, ok := parseResult(good); ok {
			r.last, r.done = flat, done
		} else {
			r.bad++ // valid JSON the scanner refuses (nested too deep)
		}
	}
	if reset {
		// The file was rewritten (a trial restored from a checkpoint drops
		// later results): count again from its start.
		r.bad, r.last, r.done = 0, nil, false
		r.summary = tailer{root: r.summary.root, path: path}
		r.size = -1
		return r.refresh()
	}
	if r.series != nil {
		r.load()
	}
	return true
}

// load reads what result.json gained since the last load into r.series.
func (r *run) load() {
	if r.tf != nil {
		r.loadTF()
		return
	}
	if r.series == nil {
		r.series = newSeries(r.summary.root, r.summary.path)
	}
	s := r.series
	reset, _ := s.tail.next(func(line []byte) {
		if flat, _, ok := parseResult(line); ok {
			s.add(flat)
		}
	})
	if reset {
		s.reset()
		s.tail = tailer{root: s.tail.root, path: s.tail.path}
		r.load()
	}
	// An error (the file vanished or left the log dir) keeps what was read.
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
// and its grandchildren that hold a result.json, or else event files
// (runs of other tools), never following a link out of root.
func scanRuns(root string) (runs []*runFolder, sweeps []*runFolder) {
	var visit func(dir, rel string, depth int)
	visit = func(dir, rel string, depth int) {
		if fileInside(root, filepath.Join(dir, resultFile)) {
			runs = append(runs, &runFolder{dir: dir, rel: rel})
		} else if hasEventFiles(root, dir) {
			runs = append(runs, &runFolder{dir: dir, rel: rel, tf: true})
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
type runFolder struct {
	dir, rel string
	tf       bool // read from event files: it has no result.json
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// dirInside reports whether path is a folder whose real location (links
// resolved) is root or below it.
func dirInside(root, path string) bool {
	st, ok := statInside(root, path)
	return ok && st.IsDir()
}

// fileInside reports whether path is a regular file whose real location
// is below root.
func fileInside(root, path string) bool {
	st, ok := statInside(root, path)
	return ok && st.Mode().IsRegular()
}

// statInside stats path when its real location (links resolved) is root
// or below it. root is a resolved path. It looks at the parts of path
// below root one Lstat each, and only when one of them is a link resolves
// the whole path: the index checks every run's file this way at every
// look, and resolving from / cost it most of its time.
func statInside(root, path string) (fs.FileInfo, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !within(root, path) {
		return nil, false
	}
	st, err := os.Lstat(root)
	if err != nil {
		return nil, false
	}
	cur := root
	for rest := rel; rest != "." && rest != ""; {
		part, more, _ := strings.Cut(rest, string(filepath.Separator))
		rest = more
		cur = filepath.Join(cur, part)
		if st, err = os.Lstat(cur); err != nil {
			return nil, false
		}
		if st.Mode()&os.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(path)
			if err != nil || !within(root, real) {
				return nil, false
			}
			st, err = os.Stat(real)
			return st, err == nil
		}
	}
	return st, true
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
