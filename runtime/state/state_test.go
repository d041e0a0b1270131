package state

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
)

func TestParseFilters(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		specs   []string
		want    []Filter
		wantErr string
	}{
		{"tasks", []string{"state=failed"}, []Filter{{Key: "state", Value: "failed"}}, ""},
		{"tasks", []string{"state!=finished", "job_id=j1"}, []Filter{{Key: "state", Value: "finished", Not: true}, {Key: "job_id", Value: "j1"}}, ""},
		{"tasks", []string{"state"}, nil, "is not key=value"},
		{"tasks", []string{"colour=red"}, nil, `have no key "colour"`},
		{"tasks", []string{"state=exploded"}, nil, `"exploded" is not a task state`},
		{"widgets", nil, nil, `unknown kind "widgets"`},
	} {
		got, err := ParseFilters(tc.kind, tc.specs)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseFilters(%s, %q) = %v, want one line with %q", tc.kind, tc.specs, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseFilters(%s, %q) = %v, %v; want %v", tc.kind, tc.specs, got, err, tc.want)
		}
	}
}

// tables is a control store's content held in memory.
type tables struct {
	jobs   []control.JobInfo
	tasks  map[string][]control.TaskEntry
	actors map[string][]control.ActorEntry
}

func (tb tables) Nodes(context.Context) ([]control.NodeInfo, error) { return nil, nil }
func (tb tables) Jobs(context.Context) ([]control.JobInfo, error)   { return tb.jobs, nil }
func (tb tables) JobTasks(_ context.Context, job string) ([]control.TaskEntry, error) {
	return tb.tasks[job], nil
}
func (tb tables) JobActors(_ context.Context, job string) ([]control.ActorEntry, error) {
	return tb.actors[job], nil
}

func TestListFiltersAndLimits(t *testing.T) {
	tb := tables{
		jobs: []control.JobInfo{{ID: "j1"}, {ID: "j2", Dropped: 3}},
		tasks: map[string][]control.TaskEntry{
			"j1": {{ID: "a", Job: "j1", State: "finished"}, {ID: "b", Job: "j1", State: "failed"}},
			"j2": {{ID: "c", Job: "j2", State: "failed"}, {ID: "d", Job: "j2", State: "running"}},
		},
	}
	ids := func(r *Result) string {
		var s []string
		for _, row := range r.Rows {
			s = append(s, row.(TaskRow).TaskID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name    string
		filters []string
		limit   int
		want    string
		matched int
	}{
		{"all", nil, 0, "a,b,c,d", 4},
		{"failed", []string{"state=failed"}, 0, "b,c", 2},
		{"not failed", []string{"state!=failed"}, 0, "a,d", 2},
		{"one job", []string{"job_id=j2"}, 0, "c,d", 2},
		{"limit counts what matched", []string{"state=failed"}, 1, "b", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := ParseFilters("tasks", tc.filters)
			if err != nil {
				t.Fatal(err)
			}
			res, err := List(context.Background(), tb, "tasks", fs, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res); got != tc.want || res.Matched != tc.matched {
				t.Errorf("rows %q (%d matched), want %q (%d)", got, res.Matched, tc.want, tc.matched)
			}
		})
	}
}

// The JSON keys are a documented interface (docs/cluster.md): snake_case,
// resources by name.
func TestStatusKeysAndResources(t *testing.T) {
	r := task.Resources{CPU: 2, GPU: 1, Custom: map[string]float64{"tpu": 4}}
	if back := ResourcesOf(r).Task(); !reflect.DeepEqual(back, r) {
		t.Fatalf("ResourcesOf(%v).Task() = %v", r, back)
	}
	b, err := json.Marshal(Status{ResourcesTotal: ResourcesOf(r), Nodes: []NodeStatus{{NodeRow: NodeRow{NodeID: "n1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"nodes_alive"`, `"resources_total":{"CPU":2,"GPU":1,"tpu":4}`, `"object_store_capacity_bytes"`, `"node_id":"n1"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("status JSON %s lacks %s", b, key)
		}
	}
}
