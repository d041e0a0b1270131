package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// killRecorder is a runtime that records the actors it is asked to end,
// so that tests can tell a refused request from one that reached it.
type killRecorder struct {
	fakeRuntime
	mu     sync.Mutex
	killed []string
	logDir string
}

func (k *killRecorder) KillActor(_ context.Context, id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = append(k.killed, id)
	return nil
}

func (k *killRecorder) WorkerLogDir() string { return k.logDir }

func post(h http.Handler, url string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, url, nil)
	req.Host = "127.0.0.1:8265"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestKillActorIsAPostFromTheDashboardsOwnPage(t *testing.T) {
	const self = "http://127.0.0.1:8265"
	for _, c := range []struct {
		name  string
		token string
		get   bool
		hdr   []string
		want  int
	}{
		{"GET refused", "", true, []string{"Origin", self}, http.StatusMethodNotAllowed},
		{"own page (Origin)", "", false, []string{"Origin", self}, http.StatusOK},
		{"own page (Sec-Fetch-Site)", "", false, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"another site's page", "", false, []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"another port of this host", "", false, []string{"Origin", "http://127.0.0.1:9999"}, http.StatusForbidden},
		{"cross-site fetch", "", false, []string{"Sec-Fetch-Site", "cross-site", "Origin", self}, http.StatusForbidden},
		{"no token and no origin (curl)", "", false, nil, http.StatusForbidden},
		{"token set, none given", "s3cret", false, []string{"Origin", self}, http.StatusUnauthorized},
		{"token set, wrong one", "s3cret", false, []string{"Origin", self, "X-Gray-Token", "nope"}, http.StatusUnauthorized},
		{"token given, no origin (a script)", "s3cret", false, []string{"X-Gray-Token", "s3cret"}, http.StatusOK},
		{"token given from another site", "s3cret", false, []string{"X-Gray-Token", "s3cret", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := &killRecorder{fakeRuntime: fakeRuntime{snap: syntheticSnapshot(1, 1)}}
			srv := testServer(t, Options{LogDir: t.TempDir(), Runtime: rt, Token: c.token})
			var rec *httptest.ResponseRecorder
			if c.get {
				rec = get(t, srv.Handler(), "/api/runtime/kill?actor=ab12", c.hdr...)
			} else {
				rec = post(srv.Handler(), "/api/runtime/kill?actor=ab12", c.hdr...)
			}
			if rec.Code != c.want {
				t.Fatalf("status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), c.want)
			}
			if reached := len(rt.killed) > 0; reached != (c.want == http.StatusOK) {
				t.Errorf("the runtime was asked to kill: %v, status %d", rt.killed, rec.Code)
			}
		})
	}
}

func TestWorkerLogsRefuseLinks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "worker-1.err"), "hello from worker 1\n")
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "not yours\n")
	if err := os.Symlink(secret, filepath.Join(dir, "worker-2.err")); err != nil {
		t.Fatal(err)
	}
	rt := &killRecorder{fakeRuntime: fakeRuntime{snap: syntheticSnapshot(1, 1)}, logDir: dir}
	h := testServer(t, Options{LogDir: t.TempDir(), Runtime: rt}).Handler()
	list := decode[struct {
		Files []logFile `json:"files"`
	}](t, get(t, h, "/api/runtime/workerlogs"))
	if len(list.Files) != 1 || list.Files[0].Name != "worker-1.err" {
		t.Fatalf("files %+v, want worker-1.err alone (the link left out)", list.Files)
	}
	if body := get(t, h, "/api/runtime/workerlog?file=worker-1.err").Body.String(); body != "hello from worker 1\n" {
		t.Errorf("log %q", body)
	}
	for _, f := range []string{"worker-2.err", "../secret", secret} {
		if rec := get(t, h, "/api/runtime/workerlog?file="+f); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "not yours") {
			t.Errorf("file=%s: %d %q", f, rec.Code, rec.Body.String())
		}
	}
}

func TestHistoryRingIsBounded(t *testing.T) {
	h := newHistory(time.Second)
	if h.size != 3600 {
		t.Fatalf("a second's samples keep %d, want an hour's 3600", h.size)
	}
	h = newHistory(time.Millisecond)
	if h.size != historyMax {
		t.Fatalf("ring of %d, want at most %d", h.size, historyMax)
	}
	now := time.Now()
	for i := 0; i < 3*historyMax; i++ {
		h.add(h.host, sample{T: now.Add(time.Duration(i) * time.Millisecond).UnixMilli(), CPU: 0.5, MemUsed: 1 << 30, MemTotal: 2 << 30})
	}
	r := h.rings[h.host]
	if r == nil || len(r.buf) != historyMax || len(r.list()) != historyMax {
		t.Fatalf("ring after %d looks: %v", 3*historyMax, r != nil)
	}
	l := r.list()
	if l[0].T >= l[len(l)-1].T || l[0].MemTotal <= 0 || l[0].CPU < 0 || l[0].CPU > 1 {
		t.Errorf("samples out of order or impossible: first %+v last %+v", l[0], l[len(l)-1])
	}
}

// Actors and tasks of the workers test. The sleeper prints to its
// standard error, which the session writes to its worker's log file.
type sleeper struct{}

var (
	sleeperActor = gray.Actor0("dashboard_test.sleeper", func(ctx context.Context) (*sleeper, error) {
		fmt.Fprintln(os.Stderr, "sleeper: constructed")
		return &sleeper{}, nil
	})
	sleeperSay = gray.Method1(sleeperActor, "Say", func(s *sleeper, ctx context.Context, msg string) (int, error) {
		fmt.Fprintln(os.Stderr, msg)
		return len(msg), nil
	})
	// waitForFile runs until path exists: a busy worker whose stacks are
	// taken while it runs.
	waitForFile = gray.Func1("dashboard_test.waitForFile", func(ctx context.Context, path string) (int, error) {
		for {
			if _, err := os.Stat(path); err == nil {
				return 0, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
)

// TestBrowserWorkersLogsStacksKillAndHistory drives the runtime page of a
// live session: a worker's log grows on its page, a busy worker's
// goroutines are dumped, an actor is killed, and the machine's CPU and
// memory are charted.
func TestBrowserWorkersLogsStacksKillAndHistory(t *testing.T) {
	browserCtx(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NumWorkers: 2, NoGPUs: true, LogDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	t.Cleanup(func() {
		writeFile(t, release, "")
		if err := gray.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	h, err := sleeperActor.Remote(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, sleeperSay.Remote(h, "sleeper: first words")); err != nil {
		t.Fatal(err)
	}
	busy := waitForFile.Remote(release)
	snap, err := SessionRuntime{}.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var actorWorker int
	for _, a := range snap.Actors {
		if a.ID == h.ID().String() {
			actorWorker = a.Worker
		}
	}
	srv := serve(t, Options{LogDir: t.TempDir(), Runtime: SessionRuntime{}, SampleEvery: 50 * time.Millisecond})
	tab, _ := newTab(t)

	// The actor's worker log, live.
	open(t, tab, fmt.Sprintf("%s#/workerlogs?worker=%d", srv.URL(), actorWorker), "workerlogs")
	waitJS(t, tab, `document.getElementById("wlogtext").textContent.includes("sleeper: first words")`)
	if _, err := gray.Get(ctx, sleeperSay.Remote(h, "sleeper: later words")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.getElementById("wlogtext").textContent.includes("sleeper: later words")`)

	// The goroutines of the worker running waitForFile, while it runs.
	open(t, tab, srv.URL()+"#/runtime", "runtime")
	waitJS(t, tab, `[...document.querySelectorAll("#rt td")].some(td => td.textContent === "dashboard_test.waitForFile")`)
	eval[bool](t, tab, `(() => { const row = [...document.querySelectorAll("#rt tr")].find(r => [...r.cells].some(c => c.textContent === "dashboard_test.waitForFile") && r.querySelector("button.stacks"));
		row.querySelector("button.stacks").click(); return true })()`)
	waitJS(t, tab, `document.getElementById("stacks").dataset.state === "shown"`)
	dump := eval[string](t, tab, `document.getElementById("stackstext").textContent`)
	if !strings.Contains(dump, "goroutine 1 [") || !strings.Contains(dump, "time.Sleep") || !strings.Contains(dump, "workers_test.go") {
		t.Errorf("goroutine dump lacks the running task:\n%.2000s", dump)
	}

	// The history chart has samples of this machine.
	waitJS(t, tab, `document.querySelector("svg.hist") !== null && Number(document.querySelector("svg.hist").dataset.samples) >= 2 && document.querySelector("svg.hist path.cpu") !== null`)
	screenshot(t, tab, "runtime-workers")

	// Killing the actor: two clicks (the first asks), then it is dead.
	kill := fmt.Sprintf(`document.querySelector('button.kill[data-actor="%s"]')`, h.ID().String())
	waitJS(t, tab, kill+` !== null`)
	eval[bool](t, tab, `(() => { `+kill+`.click(); return true })()`)
	waitJS(t, tab, kill+`.classList.contains("confirm")`)
	eval[bool](t, tab, `(() => { `+kill+`.click(); return true })()`)
	waitJS(t, tab, `document.getElementById("killnote").dataset.state === "killed"`)
	if _, err := gray.Get(ctx, sleeperSay.Remote(h, "after")); !errors.Is(err, gray.ErrActorDead) {
		t.Errorf("a call to the killed actor: %v, want ErrActorDead", err)
	}
	waitJS(t, tab, `[...document.querySelectorAll("#rt tr")].some(r => r.cells[0].textContent === "`+h.ID().String()+`" && r.cells[2].textContent === "DEAD")`)
	writeFile(t, release, "")
	if _, err := gray.Get(ctx, busy); err != nil {
		t.Fatal(err)
	}
}
