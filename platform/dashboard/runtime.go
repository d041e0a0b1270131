package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Runtime is a session the dashboard can show: its state now and its
// recent task events. Implementations: SessionRuntime (this process's
// gray session) and RemoteRuntime (another dashboard's session).
type Runtime interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
	Timeline(ctx context.Context) ([]TaskEvent, error)
}

// ObjectFinder is a Runtime that can look an object up by its ID.
type ObjectFinder interface {
	FindObject(ctx context.Context, id string) (*ObjectInfo, error)
}

// ObjectInfo is one object of the session; nil from FindObject when the
// session does not hold it.
type ObjectInfo struct {
	ID      string `json:"id"`
	Size    int    `json:"size"`
	Shared  bool   `json:"shared"`
	Failed  string `json:"failed"`
	Creator string `json:"creator"`
}

// Snapshot is a runtime's state at one moment.
type Snapshot struct {
	Nodes   []NodeInfo   `json:"nodes"`
	Workers []WorkerInfo `json:"workers"`
	Tasks   []TaskInfo   `json:"tasks"`
	Actors  []ActorInfo  `json:"actors"`
	Errors  []ErrorInfo  `json:"errors"`
}

// NodeInfo is one machine of the session.
type NodeInfo struct {
	Name          string             `json:"name"`
	Total         map[string]float64 `json:"total"`
	Available     map[string]float64 `json:"available"`
	Objects       int                `json:"objects"`
	StoreUsed     int64              `json:"store_used"`
	StoreCapacity int64              `json:"store_capacity"`
}

// WorkerInfo is one worker process.
type WorkerInfo struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Actor   string `json:"actor"`
	Running string `json:"running"`
	Queued  int    `json:"queued"`
}

// TaskInfo is one unfinished task.
type TaskInfo struct {
	ID     string `json:"id"`
	Func   string `json:"func"`
	State  string `json:"state"`
	Worker int    `json:"worker"`
}

// ActorInfo is one actor.
type ActorInfo struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	State   string `json:"state"`
	Worker  int    `json:"worker"`
	Pending int    `json:"pending"`
	// DirectCallers: actors that call it directly (not in Pending).
	DirectCallers int `json:"direct_callers"`
}

// ErrorInfo is one failed task, with the remote stack when it panicked.
type ErrorInfo struct {
	Function string `json:"function"`
	Worker   string `json:"worker"`
	Message  string `json:"message"`
	Stack    string `json:"stack"`
}

// TaskEvent is one task's run on a worker; times in microseconds since
// the Unix epoch.
type TaskEvent struct {
	TaskID string `json:"id"`
	Func   string `json:"func"`
	Worker int    `json:"worker"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// snapshotCache shares one snapshot among the requests of a short window,
// so many open pages cost the runtime one snapshot per window.
type snapshotCache struct {
	rt  Runtime
	ttl time.Duration

	mu   sync.Mutex
	at   time.Time
	snap *Snapshot
}

func (c *snapshotCache) get(ctx context.Context) (*Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && time.Since(c.at) < c.ttl {
		return c.snap, nil
	}
	s, err := c.rt.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	c.snap, c.at = s, time.Now()
	return s, nil
}

func (s *Server) runtimeRoutes(mux *http.ServeMux) {
	if s.opts.Runtime == nil {
		none := func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "dashboard: not connected to a runtime session (start it with --address, or use train --dashboard)", http.StatusNotFound)
		}
		mux.HandleFunc("GET /api/runtime/", none)
		mux.HandleFunc("POST /api/runtime/", none)
		mux.HandleFunc("GET /api/timeline", none)
		mux.HandleFunc("GET /api/timeline/trace", none)
		return
	}
	c := &snapshotCache{rt: s.opts.Runtime, ttl: 250 * time.Millisecond}
	with := func(fn func(http.ResponseWriter, *http.Request, *Snapshot)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			snap, err := c.get(r.Context())
			if err != nil {
				upstreamError(w, "reading the runtime's state", err)
				return
			}
			fn(w, r, snap)
		}
	}
	mux.HandleFunc("GET /api/runtime/snapshot", with(func(w http.ResponseWriter, _ *http.Request, snap *Snapshot) { writeJSON(w, snap) }))
	mux.HandleFunc("GET /api/runtime/summary", with(runtimeSummary))
	mux.HandleFunc("GET /api/runtime/tasks", with(runtimeTasks))
	mux.HandleFunc("GET /api/runtime/actors", with(runtimeActors))
	mux.HandleFunc("GET /api/runtime/errors", with(runtimeErrors))
	mux.HandleFunc("GET /api/runtime/search", with(s.runtimeSearch))
	mux.HandleFunc("GET /api/runtime/object", s.runtimeObject)
	mux.HandleFunc("GET /api/timeline", s.apiTimeline)
	mux.HandleFunc("GET /api/timeline/trace", s.apiTrace)
	s.workerRoutes(mux)
}

// upstreamError answers 502 for a runtime that failed. A RemoteRuntime's
// errors already start with "dashboard: "; the answer says it once.
func upstreamError(w http.ResponseWriter, doing string, err error) {
	msg := strings.TrimPrefix(err.Error(), "dashboard: ")
	http.Error(w, "dashboard: "+doing+": "+msg, http.StatusBadGateway)
}

// pageBounds reads offset and limit (default 0 and 100, limit at most 1000).
func pageBounds(r *http.Request) (offset, limit int) {
	offset, _ = strconv.Atoi(r.URL.Query().Get("offset"))
	limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
	offset = max(offset, 0)
	if limit <= 0 {
		limit = 100
	}
	return offset, min(limit, 1000)
}

// paginate writes items[offset:offset+limit] with the total count.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) {
	offset, limit := pageBounds(r)
	total := len(items)
	lo := min(offset, total)
	hi := min(lo+limit, total)
	if items == nil {
		items = []T{}
	}
	writeJSON(w, map[string]any{"total": total, "offset": lo, "limit": limit, "items": items[lo:hi]})
}

type group struct {
	Func  string `json:"func"`
	State string `json:"state"`
	Count int    `json:"count"`
}

func runtimeSummary(w http.ResponseWriter, _ *http.Request, snap *Snapshot) {
	byKey := map[[2]string]int{}
	for _, t := range snap.Tasks {
		byKey[[2]string{t.Func, t.State}]++
	}
	groups := make([]group, 0, len(byKey))
	for k, n := range byKey {
		groups = append(groups, group{Func: k[0], State: k[1], Count: n})
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Count != groups[j].Count {
			return groups[i].Count > groups[j].Count
		}
		return groups[i].Func+groups[i].State < groups[j].Func+groups[j].State
	})
	actors := map[string]int{}
	for _, a := range snap.Actors {
		actors[a.State]++
	}
	writeJSON(w, map[string]any{
		"nodes": snap.Nodes, "workers": snap.Workers, "task_groups": groups, "actor_states": actors,
		"tasks": len(snap.Tasks), "actors": len(snap.Actors), "errors": len(snap.Errors),
	})
}

func runtimeTasks(w http.ResponseWriter, r *http.Request, snap *Snapshot) {
	state, fn := r.URL.Query().Get("state"), r.URL.Query().Get("func")
	items := snap.Tasks
	if state != "" || fn != "" {
		items = nil
		for _, t := range snap.Tasks {
			if (state == "" || t.State == state) && (fn == "" || t.Func == fn) {
				items = append(items, t)
			}
		}
	}
	paginate(w, r, items)
}

func runtimeActors(w http.ResponseWriter, r *http.Request, snap *Snapshot) {
	state := r.URL.Query().Get("state")
	items := snap.Actors
	if state != "" {
		items = nil
		for _, a := range snap.Actors {
			if a.State == state {
				items = append(items, a)
			}
		}
	}
	paginate(w, r, items)
}

func runtimeErrors(w http.ResponseWriter, r *http.Request, snap *Snapshot) {
	paginate(w, r, snap.Errors)
}

// runtimeSearch finds tasks and actors whose ID starts with ?id= (at
// least 4 hex digits), at most 50 of each, and the object with that ID
// when the runtime can look objects up.
func (s *Server) runtimeSearch(w http.ResponseWriter, r *http.Request, snap *Snapshot) {
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("id")))
	if len(q) < 4 {
		badRequest(w, "give at least 4 characters of a task or actor ID")
		return
	}
	var tasks []TaskInfo
	var actors []ActorInfo
	for _, t := range snap.Tasks {
		if strings.HasPrefix(t.ID, q) && len(tasks) < 50 {
			tasks = append(tasks, t)
		}
	}
	for _, a := range snap.Actors {
		if strings.HasPrefix(a.ID, q) && len(actors) < 50 {
			actors = append(actors, a)
		}
	}
	var obj *ObjectInfo
	if f, ok := s.opts.Runtime.(ObjectFinder); ok && len(q) == 40 {
		obj, _ = f.FindObject(r.Context(), q) // not an object ID: no object
	}
	writeJSON(w, map[string]any{"tasks": tasks, "actors": actors, "object": obj})
}

// runtimeObject answers /api/runtime/object?id= (RemoteRuntime asks it).
func (s *Server) runtimeObject(w http.ResponseWriter, r *http.Request) {
	f, ok := s.opts.Runtime.(ObjectFinder)
	if !ok {
		http.Error(w, "dashboard: this runtime cannot look objects up", http.StatusNotFound)
		return
	}
	obj, err := f.FindObject(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	writeJSON(w, map[string]any{"object": obj})
}

// maxTimeline is the most task events the timeline page gets.
const maxTimeline = 20000

func (s *Server) apiTimeline(w http.ResponseWriter, r *http.Request) {
	evs, err := s.opts.Runtime.Timeline(r.Context())
	if err != nil {
		upstreamError(w, "reading the task timeline", err)
		return
	}
	if len(evs) > maxTimeline {
		evs = evs[len(evs)-maxTimeline:]
	}
	writeJSON(w, map[string]any{"events": evs})
}

// apiTrace serves the timeline in the Chrome trace format (what `gray
// timeline --address` fetches).
func (s *Server) apiTrace(w http.ResponseWriter, r *http.Request) {
	evs, err := s.opts.Runtime.Timeline(r.Context())
	if err != nil {
		upstreamError(w, "reading the task timeline", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="trace.json"`)
	_ = WriteChromeTrace(w, evs)
}

// chromeEvent is one event of the Chrome trace format.
type chromeEvent struct {
	Name string            `json:"name"`
	Cat  string            `json:"cat,omitempty"`
	Ph   string            `json:"ph"`
	TS   int64             `json:"ts"`
	Dur  int64             `json:"dur"`
	PID  int               `json:"pid"`
	TID  int               `json:"tid"`
	Args map[string]string `json:"args,omitempty"`
}

// WriteChromeTrace writes task events as a Chrome trace (the object form:
// {"traceEvents": [...]}), one complete ("X") event per task, the worker
// as its thread.
func WriteChromeTrace(w interface{ Write([]byte) (int, error) }, evs []TaskEvent) error {
	out := make([]chromeEvent, 0, len(evs))
	for _, e := range evs {
		out = append(out, chromeEvent{
			Name: e.Func, Cat: "task", Ph: "X", TS: e.Start, Dur: max(e.End-e.Start, 0), PID: 1, TID: e.Worker,
			Args: map[string]string{"task_id": e.TaskID},
		})
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": out, "displayTimeUnit": "ms"})
}
