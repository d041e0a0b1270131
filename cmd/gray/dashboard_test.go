package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/platform/dashboard"
)

// oneTask is a session that ran one task on each of two workers.
type oneTask struct{}

func (oneTask) Snapshot(context.Context) (*dashboard.Snapshot, error) {
	return &dashboard.Snapshot{}, nil
}

func (oneTask) Timeline(context.Context) ([]dashboard.TaskEvent, error) {
	return []dashboard.TaskEvent{
		{TaskID: "aa", Func: "f", Worker: 1, Start: 1000, End: 1500},
		{TaskID: "bb", Func: "g", Worker: 2, Start: 1200, End: 1300},
	}, nil
}

func TestTimelineWritesAChromeTrace(t *testing.T) {
	srv, err := dashboard.New(dashboard.Options{LogDir: t.TempDir(), Port: -1, Runtime: oneTask{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	out := filepath.Join(t.TempDir(), "trace.json")
	cmd := newRoot()
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"timeline", "--address", srv.URL(), "-o", out})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &trace); err != nil || len(trace.TraceEvents) != 2 {
		t.Fatalf("trace %s: %v", b, err)
	}
	for _, e := range trace.TraceEvents {
		for _, k := range []string{"name", "ph", "ts", "dur", "pid", "tid"} {
			if _, ok := e[k]; !ok {
				t.Errorf("event %v lacks %s", e, k)
			}
		}
	}
	if e := trace.TraceEvents[0]; e["ph"] != "X" || e["ts"] != 1000.0 || e["dur"] != 500.0 || e["tid"] != 1.0 || e["name"] != "f" {
		t.Errorf("first event %v", e)
	}
}

func TestDashboardRefusesAMissingLogDir(t *testing.T) {
	cmd := newRoot()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	missing := filepath.Join(t.TempDir(), "nope")
	cmd.SetArgs([]string{"dashboard", "--logdir", missing, "--port", "-1"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want one naming %s", err, missing)
	}
}
