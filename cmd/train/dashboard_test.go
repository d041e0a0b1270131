package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gray-ml/gray/internal/clustertest"
)

func TestTrainPrintsTheDashboardCommand(t *testing.T) {
	local := t.TempDir()
	o := train(t, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local, "--stop", `{"training_iteration": 1}`)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	if want := "gray dashboard --logdir " + local; !strings.Contains(o.stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, o.stdout)
	}
}

// TestTrainDashboardFlag: --dashboard serves the page from the training
// process at the URL it prints, while the run goes on, and stops with it.
func TestTrainDashboardFlag(t *testing.T) {
	local := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, done := startTrainDashboard(t, ctx, "--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", local,
		"--stop", `{"training_iteration": 1000000}`, "--dashboard", "--dashboard-port", "-1")
	resp, err := http.Get(url + "api/info")
	if err != nil {
		t.Fatalf("the dashboard does not answer during the run: %v", err)
	}
	var info struct {
		Runtime bool `json:"runtime"`
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if !info.Runtime {
		t.Error("train --dashboard does not show its runtime")
	}
	cancel() // Ctrl-C
	if code := <-done; code != exitInterrupted {
		t.Errorf("exit %d after the interrupt, want %d", code, exitInterrupted)
	}
	if resp, err := http.Get(url + "api/info"); err == nil {
		resp.Body.Close()
		t.Error("the dashboard still answers after the run ended")
	}
}

// TestTrainDashboardOnClusterHasTheClusterPage: train --address ...
// --dashboard serves the Cluster page, reading the cluster's Redis as
// gray dashboard --cluster does: it lists the cluster's nodes.
func TestTrainDashboardOnClusterHasTheClusterPage(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := append([]string{"--env", "Corridor-v0", "--alg", "FakeAlg", "--local-dir", t.TempDir(),
		"--stop", `{"training_iteration": 1000000}`, "--dashboard", "--dashboard-port", "-1"}, clusterArgs(c)...)
	url, done := startTrainDashboard(t, ctx, args...)
	var info struct {
		Cluster bool `json:"cluster"`
	}
	getJSON(t, url+"api/cluster/info", &info)
	if !info.Cluster {
		t.Error("train --address --dashboard has no Cluster page")
	}
	var nodes struct {
		Rows []map[string]any `json:"rows"`
	}
	getJSON(t, url+"api/cluster/nodes", &nodes)
	if len(nodes.Rows) == 0 {
		t.Errorf("the Cluster page lists no nodes of the cluster: %+v", nodes)
	}
	cancel()
	<-done
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// startTrainDashboard runs train with args until ctx ends and returns the
// dashboard URL it printed and its exit code's channel.
func startTrainDashboard(t *testing.T, ctx context.Context, args ...string) (string, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := run(ctx, args, pw, io.Discard)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	url := ""
	for sc.Scan() {
		if m := regexp.MustCompile(`^dashboard: (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" {
		t.Fatal("no dashboard URL printed")
	}
	return url, done
}
