package runlog

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gray-ml/gray/platform/tensorboard"
)

// TruncateAfter drops every result after training iteration k from
// result.json and progress.csv, and a last line cut short by a killed
// writer. A run restored from a checkpoint taken at iteration k calls it
// before logging again, so that the iterations it re-computes appear once,
// not twice. Results up to k are kept byte for byte; iteration counting and
// time_total_s continue from the last kept result. The event file the run
// writes to is cut after step k too, so every step appears once in one
// file.
func (r *Run) TruncateAfter(k int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("runlog: TruncateAfter on closed run %s", r.dir)
	}
	path := filepath.Join(r.dir, ResultFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	keep, count := 0, 0
	var last map[string]any
	for keep < len(b) {
		nl := bytes.IndexByte(b[keep:], '\n')
		if nl < 0 {
			break // cut short by a killed writer
		}
		line := b[keep : keep+nl]
		if len(bytes.TrimSpace(line)) > 0 {
			var m map[string]any
			d := json.NewDecoder(bytes.NewReader(line))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				break
			}
			if it, ok := Numeric(m["training_iteration"]); ok && int(it) > k {
				break
			}
			last, count = m, count+1
		}
		keep += nl + 1
	}
	if keep < len(b) {
		if err := r.result.Truncate(int64(keep)); err != nil {
			return fmt.Errorf("runlog: truncating %s: %w", path, err)
		}
	}
	r.count, r.total = count, 0
	if t, ok := Numeric(last["time_total_s"]); ok {
		r.total = t
	}
	if r.tb != nil {
		// Events are stepped by timesteps; each holds its iteration.
		err := r.tb.Truncate(func(ev tensorboard.Event) bool { return ev.Scalars["training_iteration"] > float32(k) })
		if err != nil {
			return fmt.Errorf("runlog: %w", err)
		}
	}
	return r.truncateCSV(k)
}

// truncateCSV cuts progress.csv before its first row whose
// training_iteration is above k (or that cannot be read).
func (r *Run) truncateCSV(k int) error {
	path := filepath.Join(r.dir, ProgressFile)
	col := -1
	for i, c := range r.cols {
		if c == "training_iteration" {
			col = i
		}
	}
	if col < 0 {
		return nil
	}
	if _, err := r.csv.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("runlog: rereading %s: %w", path, err)
	}
	rd := csv.NewReader(bufio.NewReader(r.csv))
	rd.FieldsPerRecord = -1
	if _, err := rd.Read(); err != nil { // the header
		return nil
	}
	keep := rd.InputOffset()
	for {
		row, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return nil // every row is kept
		}
		if err != nil || col >= len(row) {
			break
		}
		if it, err := strconv.ParseFloat(row[col], 64); err != nil || int(it) > k {
			break
		}
		keep = rd.InputOffset()
	}
	if err := r.csv.Truncate(keep); err != nil {
		return fmt.Errorf("runlog: truncating %s: %w", path, err)
	}
	return nil
}
