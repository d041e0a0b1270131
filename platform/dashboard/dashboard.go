// Package dashboard serves Gray's web dashboard: the runs under a log dir
// with their learning curves, Tune sweeps with their trial tables, and,
// when given a runtime, its workers, tasks, actors, errors and task
// timeline. It is one HTTP server whose page, script and styles are
// embedded in the binary; it reads the files runs already write, tailing
// them rather than reading them again, and it never serves a file.
//
// It listens on 127.0.0.1 unless told otherwise; listening elsewhere
// needs a token, generated and printed in the page's URL.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed static
var staticFS embed.FS

// DefaultPort is the port the dashboard listens on unless told otherwise.
const DefaultPort = 8265

// tokenCookie names the cookie that carries the token after the first
// visit with ?token=. Cookies are shared by every port of a host, so the
// name holds the port: two dashboards on one host keep their own.
func (s *Server) tokenCookie() string {
	return "gray_dashboard_token_" + strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port)
}

// Options configure a dashboard.
type Options struct {
	// LogDir holds the experiments and runs to show (train's --local-dir).
	LogDir string
	// Host and Port are where to listen; "" is 127.0.0.1 and 0 is
	// DefaultPort. A negative Port picks a free one.
	Host string
	Port int
	// Token, when set, is the token pages and API calls must present. It
	// is generated when Host is not a loopback address and Token is empty.
	Token string
	// Metric is the result key the runs table and sweep view rank by
	// when a sweep names none; "" is episode_reward_mean.
	Metric string
	// Runtime, when not nil, adds the runtime and timeline views.
	Runtime Runtime
	// Cluster, when not nil, adds the cluster view: every driver's
	// nodes, jobs, actors and tasks, and each node's CPU and memory over
	// the last hour (cluster.go). A *control.Redis is one.
	Cluster ClusterReader
	// Interval is the least time between two looks at the log dir's files
	// (0: one second). Pages are told of changes at this pace.
	Interval time.Duration
	// SampleEvery is how often, with a Runtime, the machine's CPU and
	// memory are sampled for the last hour's history (0: five seconds).
	SampleEvery time.Duration
}

// Server is a dashboard. Create it with New and run it with Serve.
type Server struct {
	opts     Options
	root     string
	idx      *index
	token    string
	loopback bool
	ln       net.Listener
	handler  http.Handler
	history  *history // the nodes' CPU and memory (with a Runtime)
	boot     string   // random, names this server's answers in ETags

	runsAnswer answer // /api/runs, encoded once per version of the index
}

// New prepares a dashboard for opts.LogDir and starts listening. It fails
// when the log dir is not a readable folder or the address is taken.
func New(opts Options) (*Server, error) {
	if opts.LogDir == "" {
		return nil, errors.New("dashboard: no log dir given (pass --logdir, the --local-dir runs were written to)")
	}
	abs, err := filepath.Abs(opts.LogDir)
	if err != nil {
		return nil, fmt.Errorf("dashboard: log dir %s: %w", opts.LogDir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("dashboard: log dir %s: %w", abs, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("dashboard: log dir %s: %w", abs, err)
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	if opts.Metric == "" {
		opts.Metric = "episode_reward_mean"
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	s := &Server{opts: opts, root: root, idx: newIndex(root, opts.Interval), loopback: isLoopback(opts.Host), history: newHistory(opts.SampleEvery)}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("dashboard: generating a nonce: %w", err)
	}
	s.boot = hex.EncodeToString(nonce[:])
	s.token = opts.Token
	if s.token == "" && !s.loopback {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("dashboard: generating a token: %w", err)
		}
		s.token = hex.EncodeToString(b[:])
	}
	port := strconv.Itoa(opts.Port)
	if opts.Port < 0 {
		port = "0"
	}
	s.ln, err = net.Listen("tcp", net.JoinHostPort(opts.Host, port))
	if err != nil {
		return nil, fmt.Errorf("dashboard: cannot listen on %s:%s: %w (pick another --port, or stop what uses it)", opts.Host, port, err)
	}
	s.handler = s.routes()
	return s, nil
}

// URL is the address to open, with the token when one is needed.
func (s *Server) URL() string {
	addr := s.ln.Addr().(*net.TCPAddr)
	host := s.opts.Host
	if host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	u := "http://" + net.JoinHostPort(host, strconv.Itoa(addr.Port)) + "/"
	if s.token != "" {
		u += "?token=" + s.token
	}
	return u
}

// Handler is the dashboard's HTTP handler (tests and embedding servers
// use it; Serve uses it too).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers requests until ctx is done, then closes the listener and
// the open connections.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); s.idx.watch(wctx) }()
	defer func() { stopWatch(); <-watched }()
	if s.opts.Runtime != nil {
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.history.run(hctx)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		_ = srv.Close()
		<-errc
		return nil
	}
}

// Close stops listening; for a Server whose Serve never ran.
func (s *Server) Close() error { return s.ln.Close() }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// routes builds the handler: the page, its assets and the JSON API, behind
// the host and token checks.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", cacheAssets(http.StripPrefix("/static/", http.FileServer(http.FS(assets)))))
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /api/info", s.apiInfo)
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/run", s.apiRun)
	mux.HandleFunc("GET /api/series", s.apiSeries)
	mux.HandleFunc("GET /api/csv", s.apiCSV)
	mux.HandleFunc("GET /api/logs", s.apiLogs)
	mux.HandleFunc("GET /api/log", s.apiLog)
	mux.HandleFunc("GET /api/sweeps", s.apiSweeps)
	mux.HandleFunc("GET /api/sweep", s.apiSweep)
	mux.HandleFunc("GET /api/events", s.apiEvents)
	s.runtimeRoutes(mux)
	s.clusterRoutes(mux)
	return s.guard(mux)
}

// guard refuses requests with a foreign Host header on loopback (a web
// page trying DNS rebinding) and, when a token is set, requests without
// it. A valid ?token= sets a cookie so that the page's own calls carry it.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		if s.loopback && !loopbackHost(r.Host) {
			http.Error(w, "dashboard: this server answers only to localhost addresses", http.StatusForbidden)
			return
		}
		if s.token != "" {
			if q := r.URL.Query().Get("token"); q != "" && s.tokenOK(q) {
				http.SetCookie(w, &http.Cookie{Name: s.tokenCookie(), Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			} else if c, err := r.Cookie(s.tokenCookie()); err != nil || !s.tokenOK(c.Value) {
				if !s.tokenOK(r.Header.Get("X-Gray-Token")) {
					http.Error(w, "dashboard: a token is needed: open the URL the dashboard printed (it ends in ?token=...)", http.StatusUnauthorized)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return isLoopback(host)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b := pageHTML()
	if b == nil {
		http.Error(w, "dashboard: page missing from the binary", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// assetVersion names the embedded scripts and styles: a hash of them all.
// The page asks for /static/NAME?v=VERSION, which the browser may keep
// for good (a new binary's assets have a new version), so a reload fetches
// and compiles nothing it has seen.
var assetVersion = sync.OnceValue(func() string {
	h := sha256.New()
	_ = fs.WalkDir(staticFS, "static", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := staticFS.ReadFile(path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
})

// pageHTML is index.html with its asset URLs versioned; nil when missing.
var pageHTML = sync.OnceValue(func() []byte {
	b, err := staticFS.ReadFile("static/index.html")
	if err != nil {
		return nil
	}
	v := assetVersion()
	b = bytes.ReplaceAll(b, []byte(`.js"`), []byte(`.js?v=`+v+`"`))
	return bytes.ReplaceAll(b, []byte(`.css"`), []byte(`.css?v=`+v+`"`))
})

// cacheAssets lets the browser keep assets asked for by this binary's
// version, and makes it ask again for any other.
func cacheAssets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") == assetVersion() {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		next.ServeHTTP(w, r)
	})
}
