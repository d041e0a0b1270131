package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/state"
)

var (
	stateSquare = gray.Func1("test.state.square", func(ctx context.Context, x int) (int, error) { return x * x, nil })
	stateFail   = gray.Func1("test.state.fail", func(ctx context.Context, x int) (int, error) {
		return 0, errors.New("state test failure")
	})
	stateActor = gray.Actor0("test.state.Counter", func(ctx context.Context) (*Counter, error) { return &Counter{}, nil })
	stateAdd   = gray.Method1(stateActor, "add", func(c *Counter, ctx context.Context, n int) (int, error) {
		c.value += n
		return c.value, nil
	})
)

// listJSON runs `gray list KIND --json ARGS...` and decodes its rows.
func listJSON(t *testing.T, c *clustertest.Cluster, kind string, args ...string) []map[string]any {
	t.Helper()
	out, err := c.Gray(append([]string{"list", kind, "--json", "--limit", "0", "--address", c.Address()}, args...)...)
	if err != nil {
		t.Fatalf("gray list %s: %v: %s", kind, err, out)
	}
	// Notes go to standard error, which Gray merges: keep the JSON.
	if i := strings.Index(out, "["); i > 0 {
		out = out[i:]
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("gray list %s --json printed %q: %v", kind, out, err)
	}
	return rows
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sortedKeys(kind string) []string {
	ks := slices.Clone(state.Keys(kind))
	sort.Strings(ks)
	return ks
}

// TestClusterStateAPI: two drivers' work is listed by `gray list`, with
// filters, the documented JSON keys and the job lines' counts; bad input
// gets one-line errors. On a main without the task table the task list
// is empty and every job line says "0 tasks submitted, 0 finished".
func TestClusterStateAPI(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1})
	initCluster(t, c)
	waitResources(t, 2)
	ctx := context.Background()
	refs := []gray.Ref[int]{stateSquare.Remote(1), stateSquare.Remote(2), stateSquare.Remote(3)}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, stateFail.Remote(1)); err == nil {
		t.Fatal("test.state.fail succeeded")
	}
	h, err := stateActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.KeepAlive(h) // its release would end the actor that the listing below wants alive
	if _, err := gray.Get(ctx, stateAdd.Remote(h, 5)); err != nil {
		t.Fatal(err)
	}

	// The second driver: its tasks are listed beside ours.
	a := startHelper(t, c)
	a.expect("ready")
	a.do("ticks "+t.TempDir()+" 3", "submitted")
	a.do("wait", "done")
	a.CloseInput()
	if err := a.Wait(); err != nil {
		t.Fatalf("the second driver: %v", err)
	}

	var tasks []map[string]any
	clustertest.WaitFor(t, 20*time.Second, "both drivers' tasks listed as ended", func() bool {
		tasks = listJSON(t, c, "tasks")
		ended := 0
		for _, r := range tasks {
			if r["state"] == "finished" || r["state"] == "failed" {
				ended++
			}
		}
		return ended == 9 // 3 squares, 1 failure, the actor's creation and call; 3 ticks
	})
	jobsOf := map[string]map[string]int{} // name -> job -> count
	for _, r := range tasks {
		if got, want := keysOf(r), sortedKeys("tasks"); !slices.Equal(got, want) {
			t.Fatalf("task row keys %v, want %v", got, want)
		}
		name, job := r["name"].(string), r["job_id"].(string)
		if jobsOf[name] == nil {
			jobsOf[name] = map[string]int{}
		}
		jobsOf[name][job]++
		if r["node_id"] == "" || r["submitted_at"] == nil || r["ended_at"] == nil {
			t.Errorf("task row %v: want its node and times", r)
		}
	}
	if len(jobsOf["test.state.square"]) != 1 || len(jobsOf["test.share.tick"]) != 1 {
		t.Fatalf("tasks by name and job: %v", jobsOf)
	}
	var ours, theirs string
	for j := range jobsOf["test.state.square"] {
		ours = j
	}
	for j := range jobsOf["test.share.tick"] {
		theirs = j
	}
	if ours == theirs || jobsOf["test.share.tick"][theirs] != 3 || jobsOf["test.state.square"][ours] != 3 {
		t.Fatalf("want 3 squares of one job and 3 ticks of another: %v", jobsOf)
	}

	// Filters.
	failed := listJSON(t, c, "tasks", "--filter", "state=failed")
	if len(failed) != 1 || failed[0]["name"] != "test.state.fail" || !strings.Contains(failed[0]["error_message"].(string), "state test failure") {
		t.Fatalf("--filter state=failed: %v", failed)
	}
	if rows := listJSON(t, c, "tasks", "--filter", "job_id="+theirs, "--filter", "name!=nothing"); len(rows) != 3 {
		t.Fatalf("--filter job_id=%s: %d rows, want the 3 ticks", theirs, len(rows))
	}
	methods := listJSON(t, c, "tasks", "--filter", "type=actor_method")
	actors := listJSON(t, c, "actors")
	if len(actors) != 1 || actors[0]["state"] != "alive" || actors[0]["class_name"] != "test.state.Counter" || actors[0]["node_id"] == "" ||
		len(methods) != 1 || methods[0]["actor_id"] != actors[0]["actor_id"] {
		t.Fatalf("actors %v, methods %v: want the alive Counter and its call", actors, methods)
	}
	if got, want := keysOf(actors[0]), sortedKeys("actors"); !slices.Equal(got, want) {
		t.Fatalf("actor row keys %v, want %v", got, want)
	}
	nodes := listJSON(t, c, "nodes", "--filter", "state=alive")
	if len(nodes) != 2 {
		t.Fatalf("alive nodes: %v", nodes)
	}
	if got, want := keysOf(nodes[0]), sortedKeys("nodes"); !slices.Equal(got, want) {
		t.Fatalf("node row keys %v, want %v", got, want)
	}

	// Job lines count what ran: the second driver ended with 3 of 3.
	var jobs []map[string]any
	clustertest.WaitFor(t, 20*time.Second, "both jobs' counts", func() bool {
		jobs = listJSON(t, c, "jobs")
		n := 0
		for _, j := range jobs {
			switch j["job_id"] {
			case theirs:
				if j["state"] == "ended" && j["tasks_submitted"] == 3.0 && j["tasks_finished"] == 3.0 {
					n++
				}
			case ours:
				if j["tasks_submitted"] == 6.0 && j["tasks_finished"] == 6.0 && j["tasks_failed"] == 1.0 {
					n++
				}
			}
		}
		return n == 2
	})
	out, err := c.Gray("status", "--address", c.Address())
	if err != nil || !strings.Contains(out, "Job "+theirs) || !strings.Contains(out, "3 tasks submitted, 3 finished") ||
		!strings.Contains(out, "6 tasks submitted, 6 finished (1 failed)") {
		t.Fatalf("gray status: %v\n%s", err, out)
	}
	// The table prints too.
	out, err = c.Gray("list", "tasks", "--address", c.Address(), "--filter", "name=test.state.square")
	if err != nil || strings.Count(out, "test.state.square") != 3 || !strings.Contains(out, "TASK_ID") {
		t.Fatalf("gray list tasks (table): %v\n%s", err, out)
	}

	// Bad input: one line each, naming the fix.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(c.Token()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "tasks", "--filter", "colour=red"}, "use one of task_id"},
		{[]string{"list", "tasks", "--filter", "state=runing"}, "use submitted, running, finished, failed"},
		{[]string{"list", "tasks", "--filter", "state"}, "is not key=value"},
		{[]string{"list", "widgets"}, "list one of nodes, jobs, actors, tasks"},
		{[]string{"list", "tasks", "--limit", "-1"}, "--limit -1"},
		{[]string{"list", "nodes", "--address", dead, "--token-file", tokenFile}, "does not answer"},
	} {
		args := tc.args
		if !slices.Contains(args, "--address") {
			args = append(args, "--address", c.Address())
		}
		out, err := c.Gray(args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err == nil || !strings.Contains(out, tc.want) || len(lines) != 1 {
			t.Errorf("gray %s: %v, printed %q; want one line with %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}

// TestClusterStateExpires: with --keep-ended short, an ended task leaves
// the list of a job that still runs, and the cap on entries per job keeps
// the newest.
func TestClusterStateExpires(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 0, CPUsPerNode: 1, KeepEnded: 2 * time.Second, MaxTaskRecords: 5})
	initCluster(t, c)
	ctx := context.Background()
	refs := make([]gray.Ref[int], 8)
	for i := range refs {
		refs[i] = stateSquare.Remote(i)
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	clustertest.WaitFor(t, 20*time.Second, "the newest 5 tasks listed as finished", func() bool {
		rows = listJSON(t, c, "tasks", "--filter", "state=finished")
		return len(rows) == 5
	})
	out, _ := c.Gray("list", "tasks", "--address", c.Address())
	if !strings.Contains(out, "3 oldest tasks left the table") {
		t.Errorf("gray list tasks does not say the cap evicted 3 tasks:\n%s", out)
	}
	clustertest.WaitFor(t, 30*time.Second, "ended tasks to expire", func() bool {
		return len(listJSON(t, c, "tasks")) == 0
	})
	if jobs := listJSON(t, c, "jobs", "--filter", "state=running"); len(jobs) != 1 || jobs[0]["tasks_finished"] != 8.0 {
		t.Fatalf("running jobs %v: want ours, its 8 tasks counted", jobs)
	}
}
