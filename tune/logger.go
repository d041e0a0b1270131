package tune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Logger records one trial's results into its run folder.
type Logger interface {
	// Log writes one result. It must be durable against the process being
	// killed once it returns (written to the OS, not held in a buffer).
	Log(result map[string]any) error
	// Close flushes and releases the logger.
	Close() error
}

// Truncater is implemented by loggers that can drop the results a trial
// logged after an iteration. A trial restored from a checkpoint taken at
// iteration k (after a failure, or on resume after the process was killed)
// re-computes iterations k+1 onwards; the runner calls TruncateAfter(k)
// right after opening its logger so that they appear once in the trial's
// files, in order. The experiment journal keeps its own record of every
// result received. Loggers without it append, and the re-computed
// iterations then appear twice.
type Truncater interface {
	TruncateAfter(iteration int) error
}

// LoggerFactory opens a trial's logger. It is called each time a trial
// (re)starts, so it must append to what a previous run of the trial wrote
// (and, as a Truncater, drop what that run logged past the checkpoint the
// trial is restored from).
// The platform supplies one writing params.json, result.json, progress.csv
// and the event file; JSONLogger is the default.
type LoggerFactory func(trialDir string, params map[string]any) (Logger, error)

// JSONLogger is the default LoggerFactory: params.json with the trial's
// config and result.json with one JSON object per line.
func JSONLogger(trialDir string, params map[string]any) (Logger, error) {
	if err := os.MkdirAll(trialDir, 0o755); err != nil {
		return nil, fmt.Errorf("tune: trial folder: %w", err)
	}
	pb, err := json.MarshalIndent(params, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("tune: params.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(trialDir, "params.json"), pb, 0o644); err != nil {
		return nil, fmt.Errorf("tune: params.json: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(trialDir, "result.json"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tune: result.json: %w", err)
	}
	return &jsonLogger{f: f, w: bufio.NewWriterSize(f, 4096)}, nil
}

// TruncateAfter implements Truncater: result.json is cut before its first
// line whose training_iteration is above k (or that is cut short).
func (l *jsonLogger) TruncateAfter(k int) error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	b, err := os.ReadFile(l.f.Name())
	if err != nil {
		return fmt.Errorf("tune: result.json: %w", err)
	}
	keep := 0
	for keep < len(b) {
		nl := bytes.IndexByte(b[keep:], '\n')
		if nl < 0 {
			break
		}
		var r struct {
			It *float64 `json:"training_iteration"`
		}
		if err := json.Unmarshal(b[keep:keep+nl], &r); err != nil || (r.It != nil && int(*r.It) > k) {
			break
		}
		keep += nl + 1
	}
	if keep == len(b) {
		return nil
	}
	if err := l.f.Truncate(int64(keep)); err != nil {
		return fmt.Errorf("tune: truncating result.json: %w", err)
	}
	return nil
}

type jsonLogger struct {
	f *os.File
	w *bufio.Writer
}

func (l *jsonLogger) Log(r map[string]any) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("tune: result is not JSON: %w", err)
	}
	l.w.Write(b)
	l.w.WriteByte('\n')
	// One write per result: a killed process loses nothing that returned.
	return l.w.Flush()
}

func (l *jsonLogger) Close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}
