package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/runtime/task"
)

// SessionRuntime shows this process's gray session (the one gray.Init
// started): `train --dashboard` serves it.
type SessionRuntime struct{}

// Snapshot implements Runtime.
func (SessionRuntime) Snapshot(context.Context) (*Snapshot, error) {
	ns, err := gray.Snapshot()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	s := &Snapshot{Nodes: []NodeInfo{{
		Name: host, Total: resources(ns.Total), Available: resources(ns.Available),
		Objects: ns.Objects + ns.Shared.Objects, StoreUsed: ns.Shared.Used, StoreCapacity: ns.Shared.Capacity,
	}}}
	for _, w := range ns.Workers {
		s.Workers = append(s.Workers, WorkerInfo{ID: w.ID, Name: w.Name, PID: w.PID, Actor: w.Actor, Running: w.Running, Queued: w.Queued})
	}
	s.Tasks = make([]TaskInfo, len(ns.Tasks))
	for i, t := range ns.Tasks {
		s.Tasks[i] = TaskInfo{ID: t.ID.String(), Func: t.Func, State: t.State, Worker: t.Worker}
	}
	s.Actors = make([]ActorInfo, len(ns.Actors))
	for i, a := range ns.Actors {
		s.Actors[i] = ActorInfo{ID: a.ID.String(), Type: a.Type, State: a.State, Worker: a.Worker, Pending: a.Pending, DirectCallers: a.DirectCallers}
	}
	sort.Slice(s.Actors, func(i, j int) bool { return s.Actors[i].ID < s.Actors[j].ID })
	for _, e := range gray.Errors() {
		s.Errors = append(s.Errors, ErrorInfo{Function: e.Function, Worker: e.Worker, Message: e.Message, Stack: e.Stack})
	}
	return s, nil
}

func resources(r task.Resources) map[string]float64 {
	m := map[string]float64{"CPU": r.CPU, "GPU": r.GPU}
	for k, v := range r.Custom {
		m[k] = v
	}
	return m
}

// Timeline implements Runtime.
func (SessionRuntime) Timeline(context.Context) ([]TaskEvent, error) {
	evs, err := gray.Timeline()
	if err != nil {
		return nil, err
	}
	out := make([]TaskEvent, len(evs))
	for i, e := range evs {
		out[i] = TaskEvent{TaskID: e.TaskID, Func: e.Function, Worker: e.Worker, Start: e.Start.UnixMicro(), End: e.End.UnixMicro()}
	}
	return out, nil
}

// FindObject implements ObjectFinder.
func (SessionRuntime) FindObject(_ context.Context, id string) (*ObjectInfo, error) {
	o, ok, err := gray.InspectObject(id)
	if err != nil || !ok {
		return nil, err
	}
	return &ObjectInfo{ID: o.ID, Size: o.Size, Shared: o.Shared, Failed: o.Failed, Creator: o.Creator}, nil
}

// RemoteRuntime shows the session of another dashboard (a training
// process started with --dashboard) by asking its API.
type RemoteRuntime struct {
	// Base is the other dashboard's URL, such as http://127.0.0.1:8265/
	// (with ?token=... when it needs one).
	Base   string
	Client *http.Client // nil: a client with a 10 s timeout
}

// ResolveAddress turns --address into a dashboard URL: "auto" (or "") is
// the default local dashboard; host:port gets http://.
func ResolveAddress(addr string) string {
	switch {
	case addr == "" || addr == "auto":
		return fmt.Sprintf("http://127.0.0.1:%d/", DefaultPort)
	case strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://"):
		return addr
	}
	return "http://" + addr + "/"
}

// Get fetches path (such as "api/timeline/trace") from the remote
// dashboard, keeping the token of Base, and decodes JSON into v unless v is
// nil, in which case the body is returned raw.
func (r RemoteRuntime) Get(ctx context.Context, path string, v any) ([]byte, error) {
	return r.do(ctx, http.MethodGet, path, v)
}

// do is Get with another method; a POST carries the other dashboard's
// own origin, as its page's requests do.
func (r RemoteRuntime) do(ctx context.Context, method, path string, v any) ([]byte, error) {
	base, query, _ := strings.Cut(r.Base, "?")
	url := strings.TrimSuffix(base, "/") + "/" + path
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, fmt.Errorf("dashboard: address %q: %w", r.Base, err)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host)
	}
	if tok, ok := strings.CutPrefix(query, "token="); ok {
		req.Header.Set("X-Gray-Token", tok)
	}
	c := r.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dashboard: no session dashboard answers at %s: %w (start the training with --dashboard, or give --address)", base, err)
	}
	defer resp.Body.Close()
	var buf strings.Builder
	if _, err := copyLimited(&buf, resp.Body, 256<<20); err != nil {
		return nil, fmt.Errorf("dashboard: reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dashboard: %s answered %s: %s", url, resp.Status, strings.TrimSpace(buf.String()))
	}
	if v != nil {
		if err := json.Unmarshal([]byte(buf.String()), v); err != nil {
			return nil, fmt.Errorf("dashboard: %s: %w", url, err)
		}
	}
	return []byte(buf.String()), nil
}

// Snapshot implements Runtime.
func (r RemoteRuntime) Snapshot(ctx context.Context) (*Snapshot, error) {
	var s Snapshot
	if _, err := r.Get(ctx, "api/runtime/snapshot", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// FindObject implements ObjectFinder.
func (r RemoteRuntime) FindObject(ctx context.Context, id string) (*ObjectInfo, error) {
	var out struct {
		Object *ObjectInfo `json:"object"`
	}
	if _, err := r.Get(ctx, "api/runtime/object?id="+url.QueryEscape(id), &out); err != nil {
		return nil, err
	}
	return out.Object, nil
}

// Timeline implements Runtime.
func (r RemoteRuntime) Timeline(ctx context.Context) ([]TaskEvent, error) {
	var out struct {
		Events []TaskEvent `json:"events"`
	}
	if _, err := r.Get(ctx, "api/timeline", &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}
