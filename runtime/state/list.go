package state

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gray-ml/gray/runtime/control"
)

// Kinds are what List lists, in the order `gray list` names them.
var Kinds = []string{"nodes", "jobs", "actors", "tasks"}

// kindInfo is what List knows of one kind: its row type, the columns of
// its table, and the values its enumerated keys take.
type kindInfo struct {
	row     any
	columns []string
	enums   map[string][]string
}

var kinds = map[string]kindInfo{
	"nodes": {NodeRow{}, []string{"node_id", "ip", "is_head", "state", "resources_total", "object_store_used_bytes", "workers", "death_reason"},
		map[string][]string{"state": {"alive", "dead"}, "is_head": {"true", "false"}}},
	"jobs": {JobRow{}, []string{"job_id", "driver", "state", "tasks_submitted", "tasks_finished", "tasks_failed", "started_at"},
		map[string][]string{"state": {"running", "ended"}}},
	"actors": {ActorRow{}, []string{"actor_id", "job_id", "class_name", "node_id", "state", "restarts", "death_reason"},
		map[string][]string{"state": {"pending", "alive", "restarting", "dead"}}},
	"tasks": {TaskRow{}, []string{"task_id", "job_id", "name", "type", "node_id", "state", "error_message"},
		map[string][]string{"state": {"submitted", "running", "finished", "failed"},
			"type": {"function", "actor_creation", "actor_method"}}},
}

// Keys returns the JSON keys of a kind's rows, in their order.
func Keys(kind string) []string {
	k, ok := kinds[kind]
	if !ok {
		return nil
	}
	t := reflect.TypeOf(k.row)
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return out
}

// Filter keeps the rows whose Key equals Value (or, with Not, differs).
type Filter struct {
	Key, Value string
	Not        bool
}

// ParseFilters reads "key=value" and "key!=value" filters for a kind and
// checks them: an unknown key, or a value that an enumerated key never
// takes, is an error that names the keys or values to use.
func ParseFilters(kind string, specs []string) ([]Filter, error) {
	k, err := lookup(kind)
	if err != nil {
		return nil, err
	}
	keys := Keys(kind)
	var out []Filter
	for _, s := range specs {
		var f Filter
		if key, val, ok := strings.Cut(s, "!="); ok {
			f = Filter{Key: key, Value: val, Not: true}
		} else if key, val, ok := strings.Cut(s, "="); ok {
			f = Filter{Key: key, Value: val}
		} else {
			return nil, fmt.Errorf("filter %q is not key=value (e.g. --filter state=failed)", s)
		}
		f.Key = strings.TrimSpace(f.Key)
		if !contains(keys, f.Key) {
			return nil, fmt.Errorf("filter %q: %s have no key %q: use one of %s", s, kind, f.Key, strings.Join(keys, ", "))
		}
		if vals := k.enums[f.Key]; vals != nil && !contains(vals, f.Value) {
			return nil, fmt.Errorf("filter %q: %q is not a %s %s: use %s", s, f.Value, strings.TrimSuffix(kind, "s"), f.Key, strings.Join(vals, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

func lookup(kind string) (kindInfo, error) {
	k, ok := kinds[kind]
	if !ok {
		return kindInfo{}, fmt.Errorf("unknown kind %q: list one of %s", kind, strings.Join(Kinds, ", "))
	}
	return k, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Result is what List found: the rows kept (of the kind's row type),
// how many matched before the limit, and notes on what the tables may
// miss (events dropped, entries evicted).
type Result struct {
	Kind    string
	Rows    []any
	Matched int
	Notes   []string
}

// Reader is what List reads from: a cluster's control store.
type Reader interface {
	Nodes(ctx context.Context) ([]control.NodeInfo, error)
	Jobs(ctx context.Context) ([]control.JobInfo, error)
	JobTasks(ctx context.Context, job string) ([]control.TaskEntry, error)
	JobActors(ctx context.Context, job string) ([]control.ActorEntry, error)
}

// List reads the rows of a kind, keeps those every filter matches, and
// returns at most limit of them (limit <= 0: all).
func List(ctx context.Context, r Reader, kind string, filters []Filter, limit int) (*Result, error) {
	if _, err := lookup(kind); err != nil {
		return nil, err
	}
	var rows []any
	res := &Result{Kind: kind}
	switch kind {
	case "nodes":
		nodes, err := r.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			rows = append(rows, NodeRowOf(n))
		}
	default:
		jobs, err := r.Jobs(ctx)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if kind == "jobs" {
				rows = append(rows, JobRowOf(j))
				continue
			}
			if !jobWanted(filters, j.ID) {
				continue
			}
			if kind == "tasks" {
				res.Notes = append(res.Notes, jobNotes(j)...)
				ts, err := r.JobTasks(ctx, j.ID)
				if err != nil {
					return nil, err
				}
				for _, t := range ts {
					rows = append(rows, taskRowOf(taskEndedWithJobOf(t, j.Ended)))
				}
				continue
			}
			as, err := r.JobActors(ctx, j.ID)
			if err != nil {
				return nil, err
			}
			for _, a := range as {
				rows = append(rows, actorRowOf(endedWithJob(a, j.Ended)))
			}
		}
	}
	for _, row := range rows {
		if match(row, filters) {
			res.Matched++
			if limit <= 0 || len(res.Rows) < limit {
				res.Rows = append(res.Rows, row)
			}
		}
	}
	if res.Rows == nil {
		res.Rows = []any{}
	}
	return res, nil
}

// jobWanted reports whether a job_id filter lets the job's rows through,
// so that listing one job's tasks reads only that job's table.
func jobWanted(filters []Filter, job string) bool {
	for _, f := range filters {
		if f.Key == "job_id" && (f.Value == job) == f.Not {
			return false
		}
	}
	return true
}

func jobNotes(j control.JobInfo) []string {
	var out []string
	if j.Dropped > 0 {
		out = append(out, fmt.Sprintf("job %s: %d task events were dropped while its driver's buffer was full, so some of its tasks may be missing or show an old state", j.ID, j.Dropped))
	}
	if j.Evicted > 0 {
		out = append(out, fmt.Sprintf("job %s: its %d oldest tasks left the table (the head's --max-task-records)", j.ID, j.Evicted))
	}
	return out
}

// fields returns a row's values by JSON key, as text.
func fields(row any) map[string]string {
	b, _ := json.Marshal(row)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = text(v)
	}
	return out
}

func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%v", k, v[k])
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

func match(row any, filters []Filter) bool {
	if len(filters) == 0 {
		return true
	}
	f := fields(row)
	for _, flt := range filters {
		if (f[flt.Key] == flt.Value) == flt.Not {
			return false
		}
	}
	return true
}

// WriteTable prints the result as a table of the kind's main columns.
func WriteTable(out io.Writer, res *Result) {
	k := kinds[res.Kind]
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := make([]string, len(k.columns))
	for i, c := range k.columns {
		head[i] = strings.ToUpper(c)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range res.Rows {
		f := fields(row)
		vals := make([]string, len(k.columns))
		for i, c := range k.columns {
			v := f[c]
			if strings.HasSuffix(c, "_at") && v != "" {
				if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
					v = t.Local().Format("2006-01-02 15:04:05")
				}
			}
			if v == "" {
				v = "-"
			}
			vals[i] = v
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
	}
	tw.Flush()
}
