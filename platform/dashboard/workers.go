package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray"
)

// What a Runtime may offer beyond its state: each is optional, and the
// routes that need one answer 404 with the reason when it is missing.

// StackTaker is a Runtime that can take a live worker's goroutine dump.
type StackTaker interface {
	WorkerStacks(ctx context.Context, worker int) (string, error)
}

// ActorKiller is a Runtime that can end an actor.
type ActorKiller interface {
	KillActor(ctx context.Context, id string) error
}

// WorkerLogDirer is a Runtime whose workers write their output to files
// (worker-N.out and worker-N.err) in a folder of this machine.
type WorkerLogDirer interface {
	WorkerLogDir() string
}

// WorkerStacks implements StackTaker.
func (SessionRuntime) WorkerStacks(ctx context.Context, worker int) (string, error) {
	return gray.WorkerStacks(ctx, worker)
}

// KillActor implements ActorKiller.
func (SessionRuntime) KillActor(_ context.Context, id string) error { return gray.KillActorID(id) }

// WorkerLogDir implements WorkerLogDirer.
func (SessionRuntime) WorkerLogDir() string { return gray.WorkerLogDir() }

// WorkerStacks implements StackTaker by asking the other dashboard.
func (r RemoteRuntime) WorkerStacks(ctx context.Context, worker int) (string, error) {
	b, err := r.Get(ctx, "api/runtime/stacks?worker="+strconv.Itoa(worker), nil)
	return string(b), err
}

// KillActor implements ActorKiller by asking the other dashboard (as a
// page of its own origin would).
func (r RemoteRuntime) KillActor(ctx context.Context, id string) error {
	_, err := r.do(ctx, http.MethodPost, "api/runtime/kill?actor="+url.QueryEscape(id), nil)
	return err
}

// stacksTimeout bounds the wait for a worker's goroutine dump.
const stacksTimeout = 10 * time.Second

func (s *Server) workerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/runtime/stacks", s.apiStacks)
	mux.HandleFunc("POST /api/runtime/kill", s.apiKill)
	mux.HandleFunc("GET /api/runtime/workerlogs", s.apiWorkerLogs)
	mux.HandleFunc("GET /api/runtime/workerlog", s.apiWorkerLog)
	mux.HandleFunc("GET /api/runtime/history", s.apiHistory)
}

// apiStacks answers /api/runtime/stacks?worker=N: the worker's goroutine
// dump as text.
func (s *Server) apiStacks(w http.ResponseWriter, r *http.Request) {
	st, ok := s.opts.Runtime.(StackTaker)
	if !ok {
		http.Error(w, "dashboard: this runtime cannot take workers' stacks", http.StatusNotFound)
		return
	}
	id, err := strconv.Atoi(r.URL.Query().Get("worker"))
	if err != nil {
		badRequest(w, "worker=%q is not a worker number", r.URL.Query().Get("worker"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), stacksTimeout)
	defer cancel()
	dump, err := st.WorkerStacks(ctx, id)
	if err != nil {
		upstreamError(w, "taking the worker's stacks", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(dump))
}

// apiKill answers POST /api/runtime/kill?actor=ID: it ends the actor.
// Changes are POSTs from the page's own origin (sameOrigin), behind the
// token when there is one (guard).
func (s *Server) apiKill(w http.ResponseWriter, r *http.Request) {
	if err := s.sameOrigin(r); err != nil {
		http.Error(w, "dashboard: "+err.Error(), http.StatusForbidden)
		return
	}
	k, ok := s.opts.Runtime.(ActorKiller)
	if !ok {
		http.Error(w, "dashboard: this runtime cannot end actors", http.StatusNotFound)
		return
	}
	id := r.URL.Query().Get("actor")
	if err := k.KillActor(r.Context(), id); err != nil {
		badRequest(w, "killing actor %s: %s", id, strings.TrimPrefix(err.Error(), "dashboard: "))
		return
	}
	writeJSON(w, map[string]any{"killed": id})
}

// sameOrigin refuses a request a page of another origin could have made:
// one whose Origin is not this server, or that the browser marks as not
// same-origin (Sec-Fetch-Site). Browsers send at least one of them with
// every POST; without a token to prove the caller, a request that carries
// neither is refused too.
func (s *Server) sameOrigin(r *http.Request) error {
	origin, site := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" {
		return fmt.Errorf("a change must come from the dashboard's own page (Sec-Fetch-Site: %s)", site)
	}
	if origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("a change must come from the dashboard's own page, not %s", origin)
		}
	}
	if origin == "" && site == "" && s.token == "" {
		return errors.New("a change needs the dashboard's page (its Origin), or a token (start the dashboard with one)")
	}
	return nil
}

// workerLogs is the folder of the runtime's worker log files, resolved,
// or "" when it has none.
func (s *Server) workerLogs() string {
	d, ok := s.opts.Runtime.(WorkerLogDirer)
	if !ok || d.WorkerLogDir() == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(d.WorkerLogDir())
	if err != nil {
		return ""
	}
	return real
}

// apiWorkerLogs answers /api/runtime/workerlogs: the workers' log files.
func (s *Server) apiWorkerLogs(w http.ResponseWriter, _ *http.Request) {
	dir := s.workerLogs()
	files := []logFile{}
	if dir != "" {
		if l := listLogFiles(dir, dir); l != nil {
			files = l
		}
	}
	writeJSON(w, map[string]any{"dir": dir, "files": files, "limit": maxLogFiles})
}

// apiWorkerLog answers /api/runtime/workerlog?file=NAME&tail=BYTES as
// /api/log does for a run's logs.
func (s *Server) apiWorkerLog(w http.ResponseWriter, r *http.Request) {
	dir := s.workerLogs()
	var path string
	if dir != "" {
		for _, f := range listLogFiles(dir, dir) {
			if f.Name == r.URL.Query().Get("file") {
				path = filepath.Join(dir, f.Name)
			}
		}
	}
	writeLogTail(w, r, dir, path, "the runtime")
}
