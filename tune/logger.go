package tune

import (
	"bufio"
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

// LoggerFactory opens a trial's logger. It is called each time a trial
// (re)starts, so it must append to what a previous run of the trial wrote.
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
