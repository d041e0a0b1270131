// Package runlog writes a run folder: the layout every training run and
// every Tune trial leaves behind, so that users read, compare and resume
// runs the same way whatever produced them.
//
//	<local-dir>/<experiment>/<ALG>_<ENV>[_<tag>]_<date>_<id>/
//	    config.json                       every hyperparameter used
//	    params.json                       (Tune) the sampled hyperparameters
//	    run.json                          what was run: algorithm, env, seed, command
//	    result.json                       one JSON object per line, per result
//	    progress.csv                      the same results as a table
//	    events.out.tfevents.<unix>.<host> the numeric results for TensorBoard
//	    checkpoint_<n>/                   checkpoints (see platform/checkpoint)
//	    logs/                             worker processes' output (train)
//
// Every result is written to result.json, progress.csv and the event file
// before Log returns, each with a single write call (and, unless NoSync,
// an fsync of result.json), so killing the process loses no result that
// Log had returned for.
//
// progress.csv's columns are the flattened keys of the first result. When
// a later result brings a key the header lacks, the file is rewritten once
// with the wider header (earlier rows get empty cells) into a temporary
// file that is then renamed over the old one, so the file is a valid CSV at
// every moment and a kill during the rewrite leaves the previous version.
// Keys that stop appearing get empty cells. result.json is the complete
// record; the CSV is its table view.
package runlog

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gray-ml/gray/platform/tensorboard"
)

// File names inside a run folder.
const (
	ConfigFile   = "config.json"
	ParamsFile   = "params.json"
	RunInfoFile  = "run.json"
	ResultFile   = "result.json"
	ProgressFile = "progress.csv"
)

// DateFormat is the layout of the date in run folder names and of the
// "date" key of results.
const DateFormat = "2006-01-02_15-04-05"

// Options describe a run folder to create.
type Options struct {
	// LocalDir holds the experiment folders (the CLI's --local-dir).
	LocalDir string
	// Experiment names the experiment folder; "default" when empty.
	Experiment string
	// Alg and Env name the algorithm and environment; they start the run
	// folder's name.
	Alg, Env string
	// Tag, when set, goes between the environment and the date in the
	// folder name (Tune puts the trial number and its hyperparameters here).
	Tag string
	// Config is written to config.json: every hyperparameter in use.
	Config any
	// Params, when not nil, is written to params.json (Tune's sampled
	// hyperparameters).
	Params any
	// Info, when not nil, is written to run.json.
	Info any
	// NoSync skips the fsync of result.json after each result. Results
	// still survive a killed process (they are in the kernel once written);
	// only an operating-system crash could lose the last ones. Sweeps with
	// many short results set it.
	NoSync bool
	// NoTensorBoard skips the event file.
	NoTensorBoard bool
}

// Run is an open run folder. Its methods are safe for concurrent use.
type Run struct {
	dir    string
	id     string
	opts   Options
	host   string
	pid    int
	mu     sync.Mutex
	result *os.File
	csv    *os.File
	cols   []string
	colSet map[string]bool
	tb     *tensorboard.Writer
	count  int
	total  float64
	closed bool
}

// Create makes a new run folder under opts.LocalDir/opts.Experiment and
// writes its config files. It fails up front, naming the folder, when the
// folder cannot be created or written.
func Create(opts Options) (*Run, error) {
	if opts.LocalDir == "" {
		return nil, errors.New("runlog: no local dir given")
	}
	if opts.Experiment == "" {
		opts.Experiment = "default"
	}
	expDir := filepath.Join(opts.LocalDir, safeName(opts.Experiment))
	if err := os.MkdirAll(expDir, 0o755); err != nil {
		return nil, fmt.Errorf("runlog: cannot create experiment folder %s: %w (choose a writable local dir)", expDir, err)
	}
	parts := []string{safeName(opts.Alg), safeName(opts.Env)}
	if opts.Tag != "" {
		parts = append(parts, safeName(opts.Tag))
	}
	parts = append(parts, time.Now().Format(DateFormat))
	base := strings.Join(parts, "_")
	var dir, id string
	for attempt := 0; ; attempt++ {
		id = fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
		dir = filepath.Join(expDir, base+"_"+id)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || attempt > 20 {
			return nil, fmt.Errorf("runlog: cannot create run folder %s: %w (choose a writable local dir)", dir, err)
		}
	}
	r, err := open(dir, id, opts)
	if err != nil {
		return nil, err
	}
	if err := writeConfigFiles(dir, opts); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// writeConfigFiles writes config.json, params.json and run.json, each when
// given.
func writeConfigFiles(dir string, opts Options) error {
	for name, v := range map[string]any{ConfigFile: opts.Config, ParamsFile: opts.Params, RunInfoFile: opts.Info} {
		if v == nil {
			continue
		}
		if err := writeJSONFile(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return nil
}

// Open opens the run folder dir itself (rather than a new folder named by
// Create): it creates dir and writes its config files when dir holds no
// results yet, and otherwise resumes it as Resume does. Tune opens each
// trial's folder this way every time the trial (re)starts.
func Open(dir string, opts Options) (*Run, error) {
	if _, err := os.Stat(filepath.Join(dir, ResultFile)); err == nil {
		return Resume(dir, opts)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runlog: cannot create run folder %s: %w (choose a writable local dir)", dir, err)
	}
	base := filepath.Base(dir)
	r, err := open(dir, base[strings.LastIndexByte(base, '_')+1:], opts)
	if err != nil {
		return nil, err
	}
	if err := writeConfigFiles(dir, opts); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Resume reopens an existing run folder to append to it (a resumed trial
// or a restored run). Iteration counting and time_total_s continue from the
// last result in result.json; events are appended to the newest event file
// (see TruncateAfter for a restored run). opts.Config, Params and Info, when
// set, replace the folder's files.
func Resume(dir string, opts Options) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("runlog: cannot resume run folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("runlog: cannot resume %s: not a folder", dir)
	}
	last, count, err := lastResult(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, err
	}
	base := filepath.Base(dir)
	id := base[strings.LastIndexByte(base, '_')+1:]
	r, err := open(dir, id, opts)
	if err != nil {
		return nil, err
	}
	r.count = count
	if t, ok := Numeric(last["time_total_s"]); ok {
		r.total = t
	}
	for name, v := range map[string]any{ConfigFile: opts.Config, ParamsFile: opts.Params, RunInfoFile: opts.Info} {
		if v == nil {
			continue
		}
		if err := writeJSONFile(filepath.Join(dir, name), v); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func open(dir, id string, opts Options) (*Run, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	r := &Run{dir: dir, id: id, opts: opts, host: host, pid: os.Getpid(), colSet: map[string]bool{}}
	r.result, err = os.OpenFile(filepath.Join(dir, ResultFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runlog: cannot write run folder %s: %w (choose a writable local dir)", dir, err)
	}
	if err := r.openCSV(); err != nil {
		r.result.Close()
		return nil, err
	}
	if !opts.NoTensorBoard {
		if r.tb, err = tensorboard.Append(dir); err != nil {
			r.result.Close()
			r.csv.Close()
			return nil, fmt.Errorf("runlog: %w", err)
		}
	}
	return r, nil
}

// openCSV opens progress.csv for appending and reads its header, if any.
func (r *Run) openCSV() error {
	path := filepath.Join(r.dir, ProgressFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("runlog: cannot write %s: %w", path, err)
	}
	header, err := csv.NewReader(f).Read()
	if err != nil && err != io.EOF {
		f.Close()
		return fmt.Errorf("runlog: reading the header of %s: %w", path, err)
	}
	r.csv, r.cols = f, header
	for _, c := range header {
		r.colSet[c] = true
	}
	return nil
}

// Dir is the run folder.
func (r *Run) Dir() string { return r.dir }

// ID is the run's short random id, the last part of its folder name; it is
// logged as experiment_id.
func (r *Run) ID() string { return r.id }

// Log writes one result. It adds the bookkeeping keys a result lacks:
// training_iteration (counting Log calls), time_total_s (the sum of
// time_this_iter_s), done (false), and always date, timestamp, hostname,
// pid and experiment_id. It returns the result as written.
func (r *Run) Log(result map[string]any) (map[string]any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("runlog: Log on closed run %s", r.dir)
	}
	res, _ := normalize(result).(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	r.count++
	if _, ok := res["training_iteration"]; !ok {
		res["training_iteration"] = int64(r.count)
	}
	if t, ok := Numeric(res["time_total_s"]); ok {
		r.total = t
	} else {
		if dt, ok := Numeric(res["time_this_iter_s"]); ok {
			r.total += dt
		}
		res["time_total_s"] = r.total
	}
	if _, ok := res["done"]; !ok {
		res["done"] = false
	}
	now := time.Now()
	res["date"] = now.Format(DateFormat)
	// Seconds since the Unix epoch with microseconds: whole seconds stack
	// a fast run's results into vertical bars on a wall-time axis.
	res["timestamp"] = float64(now.UnixMicro()) / 1e6
	res["hostname"] = r.host
	res["pid"] = int64(r.pid)
	res["experiment_id"] = r.id

	// result.json first: it is the complete record.
	line, err := json.Marshal(jsonSafe(res))
	if err != nil {
		return nil, fmt.Errorf("runlog: encoding result: %w", err)
	}
	var errs []error
	if _, err := r.result.Write(append(line, '\n')); err != nil {
		errs = append(errs, fmt.Errorf("runlog: writing %s: %w", ResultFile, err))
	} else if !r.opts.NoSync {
		if err := r.result.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("runlog: syncing %s: %w", ResultFile, err))
		}
	}
	flat := Flatten(res)
	if err := r.writeCSV(flat); err != nil {
		errs = append(errs, err)
	}
	if r.tb != nil {
		scalars := make(map[string]float64, len(flat))
		for k, v := range flat {
			if f, ok := Numeric(v); ok {
				scalars[k] = f
			}
		}
		step, ok := Numeric(flat["timesteps_total"])
		if !ok {
			step, _ = Numeric(flat["training_iteration"])
		}
		if err := r.tb.AddScalars(int64(step), now, scalars); err != nil {
			errs = append(errs, fmt.Errorf("runlog: %w", err))
		}
	}
	return res, errors.Join(errs...)
}

func (r *Run) writeCSV(flat map[string]any) error {
	var added []string
	for k := range flat {
		if !r.colSet[k] {
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		if err := r.widenCSV(orderColumns(added)); err != nil {
			return err
		}
	}
	row := make([]string, len(r.cols))
	for i, c := range r.cols {
		row[i] = cell(flat[c])
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(row)
	w.Flush()
	if _, err := r.csv.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("runlog: writing %s: %w", ProgressFile, err)
	}
	return nil
}

// widenCSV rewrites progress.csv with added columns appended to the header.
func (r *Run) widenCSV(added []string) error {
	path := filepath.Join(r.dir, ProgressFile)
	var rows [][]string
	if len(r.cols) > 0 {
		if _, err := r.csv.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("runlog: rereading %s: %w", path, err)
		}
		rd := csv.NewReader(bufio.NewReader(r.csv))
		rd.FieldsPerRecord = -1
		all, err := rd.ReadAll()
		if err != nil {
			return fmt.Errorf("runlog: rereading %s: %w", path, err)
		}
		if len(all) > 0 {
			rows = all[1:]
		}
	}
	cols := append(append([]string(nil), r.cols...), added...)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(cols)
	for _, row := range rows {
		w.Write(append(row, make([]string, len(cols)-len(row))...))
	}
	w.Flush()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("runlog: rewriting %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("runlog: rewriting %s: %w", path, err)
	}
	r.csv.Close()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("runlog: reopening %s: %w", path, err)
	}
	r.csv, r.cols = f, cols
	for _, c := range added {
		r.colSet[c] = true
	}
	return nil
}

// Close flushes and closes the run's files. Closing twice is harmless.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if err := r.result.Sync(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, r.result.Close(), r.csv.Close())
	if r.tb != nil {
		errs = append(errs, r.tb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runlog: closing %s: %w", r.dir, err)
	}
	return nil
}

// ReadResults reads every result of a run folder's result.json, in order.
// A last line cut short (a writer killed mid-line) is ignored.
func ReadResults(dir string) ([]map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	var out []map[string]any
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			if i == len(lines)-1 {
				break
			}
			return out, fmt.Errorf("runlog: %s line %d: %w", filepath.Join(dir, ResultFile), i+1, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// lastResult returns the last whole result of a result.json and how many
// there are; a missing file means none.
func lastResult(path string) (map[string]any, int, error) {
	res, err := ReadResults(filepath.Dir(path))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	if len(res) == 0 {
		return nil, 0, nil
	}
	return res[len(res)-1], len(res), nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(jsonSafe(normalize(v)), "", "  ")
	if err != nil {
		return fmt.Errorf("runlog: encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("runlog: cannot write %s: %w (choose a writable local dir)", path, err)
	}
	return nil
}

// safeName makes s usable as one path component. A plugin reference
// (plugin:./bin/gridworld, plugin:/x/catch.py) is named after the plugin's
// executable, without its extension: gridworld, catch.
func safeName(s string) string {
	if path, ok := strings.CutPrefix(s, "plugin:"); ok && path != "" {
		base := filepath.Base(path)
		if b := strings.TrimSuffix(base, filepath.Ext(base)); b != "" {
			base = b
		}
		s = base
	}
	if s == "" {
		return "none"
	}
	return strings.Map(func(c rune) rune {
		switch c {
		case '/', '\\', ':', ' ', '\t', '\n', '*', '?', '"', '<', '>', '|':
			return '_'
		}
		return c
	}, s)
}
