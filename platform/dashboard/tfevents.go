package dashboard

import (
	"encoding/csv"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gray-ml/gray/platform/tensorboard"
)

// Event files written by TensorBoard writers (TensorFlow, PyTorch's
// SummaryWriter, Gray's own runs beside their result.json) are named
// events.out.tfevents.<time>.<host>[...].
const tfPrefix = "events.out.tfevents."

// Keys a row read from event files has beside its tags: the events' step,
// and their wall time (the "wall" axis reads timestamp, as for result.json).
const (
	tfStepKey = "step"
	tfWallKey = "timestamp"
)

// maxEventFiles bounds the event files of one folder that are followed.
const maxEventFiles = 100

// tfSource follows the event files of one folder, each from where the last
// look stopped. Their scalars become rows, as result.json lines are: one
// row per step, gathered from consecutive scalars of that step (TF1 and
// PyTorch write a step's scalars in one event, TF2 one event per scalar).
type tfSource struct {
	root, dir string
	tails     map[string]*tensorboard.Tail
	size      int64     // bytes of all event files at the last look
	mtime     time.Time // the newest event file's modification time

	row  map[string]float64 // the row being gathered, nil when none
	step int64
}

func newTFSource(root, dir string) *tfSource {
	return &tfSource{root: root, dir: dir, tails: map[string]*tensorboard.Tail{}}
}

// hasEventFiles reports whether dir holds an event file inside root.
func hasEventFiles(root, dir string) bool {
	return len(eventFiles(root, dir)) > 0
}

// eventFiles lists dir's event files that resolve inside root, by name
// (which starts with the time they were created).
func eventFiles(root, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tfPrefix) || !e.Type().IsRegular() || len(out) == maxEventFiles {
			continue
		}
		if fileInside(root, filepath.Join(dir, e.Name())) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// next reads what the folder's event files gained, calling fn with each
// completed row. It reports whether a file was rewritten (its rows must be
// read again from the start: reset) and whether the folder still holds
// event files. Files are opened without following links, as result.json is.
func (s *tfSource) next(fn func(row map[string]float64)) (reset, ok bool) {
	names := eventFiles(s.root, s.dir)
	if len(names) == 0 {
		return false, false
	}
	var size int64
	var mtime time.Time
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			continue
		}
		size += st.Size()
		if st.ModTime().After(mtime) {
			mtime = st.ModTime()
		}
		t := s.tails[name]
		if t == nil {
			t = &tensorboard.Tail{}
			s.tails[name] = t
		}
		if t.Off != st.Size() {
			r, _ := t.Read(f, st.Size(), s.add(fn))
			reset = reset || r
		}
		f.Close()
		s.flush(fn)
	}
	s.size, s.mtime = size, mtime
	return reset, true
}

// add returns the scalar handler that gathers rows for fn.
func (s *tfSource) add(fn func(map[string]float64)) func(tensorboard.Scalar) {
	return func(sc tensorboard.Scalar) {
		if s.row != nil {
			if _, dup := s.row[sc.Tag]; dup || sc.Step != s.step {
				s.flush(fn)
			}
		}
		if s.row == nil {
			s.row = map[string]float64{tfStepKey: float64(sc.Step), tfWallKey: sc.WallTime}
			s.step = sc.Step
		}
		s.row[sc.Tag] = shortest(sc.Value)
	}
}

// shortest is v, when it is a float32 (simple_value, DT_FLOAT), as the
// float64 of its shortest decimal form: 0.033333335, as TensorBoard shows
// it, rather than 0.03333333507180214.
func shortest(v float64) float64 {
	if float64(float32(v)) != v || v == math.Trunc(v) {
		return v
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], v, 'g', -1, 32)
	if d, err := strconv.ParseFloat(string(b), 64); err == nil {
		return d
	}
	return v
}

func (s *tfSource) flush(fn func(map[string]float64)) {
	if s.row != nil {
		fn(s.row)
		s.row = nil
	}
}

// bad is the count of damaged records seen in the folder's event files.
func (s *tfSource) bad() int {
	n := 0
	for _, t := range s.tails {
		n += t.Bad
	}
	return n
}

// refreshTF brings a run read from event files up to date. It reports
// false when the folder left the log dir, lost its event files, or gained
// a result.json (a Gray run, read from that instead by the next scan).
func (r *run) refreshTF() bool {
	if !dirInside(r.tf.root, r.dir) || fileInside(r.tf.root, filepath.Join(r.dir, resultFile)) {
		return false
	}
	reset, ok := r.tf.next(func(row map[string]float64) { r.last = row })
	if !ok {
		return false
	}
	if reset {
		r.tf = newTFSource(r.tf.root, r.dir)
		r.last, r.series = nil, nil
		return r.refreshTF()
	}
	r.bad = r.tf.bad()
	r.size, r.mtime = r.tf.size, r.tf.mtime
	if r.series != nil {
		r.loadTF()
	}
	return true
}

// loadTF reads what the event files gained into r.series, which follows
// them with its own offsets (the summary keeps only the last row).
func (r *run) loadTF() {
	if r.series == nil {
		r.series = newSeries(r.tf.root, "")
		r.series.tf = newTFSource(r.tf.root, r.dir)
	}
	s := r.series
	if reset, _ := s.tf.next(s.add); reset {
		s.reset()
		s.tf = newTFSource(r.tf.root, r.dir)
		s.tf.next(s.add)
	}
}

// writeSeriesCSV writes a run read from event files as CSV: one row per
// step, the step and wall time first, then its tags by name. The caller
// holds the index's lock (the columns are in memory, bounded by
// maxKeysPerRun).
func writeSeriesCSV(w http.ResponseWriter, name string, se *series) {
	keys := []string{tfStepKey, tfWallKey}
	for _, k := range se.sortedKeys() {
		if k != tfStepKey && k != tfWallKey {
			keys = append(keys, k)
		}
	}
	cols := make([]*column, len(keys))
	for i, k := range keys {
		cols[i] = se.cols[k]
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(keys)
	row := make([]string, len(keys))
	for i := 0; i < se.n; i++ {
		for j, c := range cols {
			row[j] = ""
			if c != nil {
				if v := c.at(i); !math.IsNaN(v) {
					row[j] = csvNumber(v)
				}
			}
		}
		_ = cw.Write(row)
	}
	cw.Flush()
}
