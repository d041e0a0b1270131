package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTailerReadsOnlyWholeNewLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, "a\nb")
	tl := &tailer{path: path}
	var got []string
	collect := func(l []byte) { got = append(got, string(l)) }
	steps := []struct {
		appendS   string
		rewrite   string
		want      []string
		wantReset bool
	}{
		{want: []string{"a"}},
		{appendS: "c\n", want: []string{"a", "bc"}},
		{want: []string{"a", "bc"}},
		{appendS: "d\ne\n", want: []string{"a", "bc", "d", "e"}},
		{rewrite: "x\n", want: []string{"x"}, wantReset: true},
	}
	for i, s := range steps {
		if s.appendS != "" {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(s.appendS)
			f.Close()
		}
		if s.rewrite != "" {
			writeFile(t, path, s.rewrite)
			got = nil
		}
		reset, err := tl.next(collect)
		if err != nil || reset != s.wantReset || strings.Join(got, ",") != strings.Join(s.want, ",") {
			t.Fatalf("step %d: got %q reset=%v err=%v; want %q reset=%v", i, got, reset, err, s.want, s.wantReset)
		}
	}
}

// testServer serves logdir through the handler, without a network. Unless
// opts says otherwise, every request looks at the files (an interval of a
// nanosecond: any two requests are further apart), so that a test that
// writes and then asks sees what it wrote, however fast it ran. With 1 ms,
// a write and the requests after it could all fall within a millisecond
// of the last look, and /api/runs answered from before the write.
func testServer(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Port = -1
	if opts.Interval == 0 {
		opts.Interval = time.Nanosecond
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func get(t testing.TB, h http.Handler, url string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	req.Host = "127.0.0.1:8265"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return v
}

func resultLine(i int, reward float64) string {
	return fmt.Sprintf(`{"training_iteration": %d, "timesteps_total": %d, "episode_reward_mean": %g, "info": {"learner": {"kl": 0.%d}}, "done": false}`+"\n", i, i*100, reward, i)
}

func TestSeriesFollowAppendsIncrementally(t *testing.T) {
	logdir := t.TempDir()
	dir := filepath.Join(logdir, "exp", "run1")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "result.json")
	writeFile(t, path, resultLine(1, 10)+resultLine(2, 20))
	srv := testServer(t, Options{LogDir: logdir})
	type series struct {
		Runs []struct {
			N      int               `json:"n"`
			Series map[string]points `json:"series"`
		} `json:"runs"`
	}
	// The server looks at the files at most every Interval (1 ns here):
	// each request after a write sees it, with no wait.
	n := func() int {
		s := decode[series](t, get(t, srv.Handler(), "/api/series?run=exp/run1&x=timesteps_total"))
		return s.Runs[0].N
	}
	if got := n(); got != 2 {
		t.Fatalf("%d results, want 2", got)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	f.WriteString(resultLine(3, 30) + `{"training_iteration": 4, "episode_rew`)
	if got := n(); got != 3 {
		t.Fatalf("%d results after a line and a half, want 3", got)
	}
	f.WriteString(`ard_mean": 40}` + "\n")
	if got := n(); got != 4 {
		t.Fatalf("%d results once the half line is whole, want 4", got)
	}
	s := decode[series](t, get(t, srv.Handler(), "/api/series?run=exp/run1&x=timesteps_total&keys=kl"))
	if r := s.Runs[0]; len(r.Series) != 1 || len(r.Series["info/learner/kl"].Y) != 3 || r.Series["info/learner/kl"].X[2] != 300 {
		t.Errorf("series %+v", r)
	}
	// The tail is at the end of the file: later refreshes read nothing old.
	st, _ := os.Stat(path)
	if off := srv.idx.runs["exp/run1"].series.tail.off; off != st.Size() {
		t.Errorf("tail offset %d, file size %d", off, st.Size())
	}
	csv := get(t, srv.Handler(), "/api/csv?run=exp/run1").Body.String()
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != 5 || !strings.Contains(lines[0], "episode_reward_mean") {
		t.Errorf("csv:\n%s", csv)
	}
}

func TestNothingOutsideTheLogDirIsServed(t *testing.T) {
	root := t.TempDir()
	logdir := filepath.Join(root, "logs")
	outside := filepath.Join(root, "secret", "run")
	os.MkdirAll(filepath.Join(logdir, "exp", "ok"), 0o755)
	os.MkdirAll(outside, 0o755)
	writeFile(t, filepath.Join(logdir, "exp", "ok", "result.json"), resultLine(1, 1))
	writeFile(t, filepath.Join(outside, "result.json"), resultLine(1, 666))
	writeFile(t, filepath.Join(outside, "config.json"), `{"password": "hunter2"}`)
	// A link to a folder outside, and a run whose files link outside.
	if err := os.Symlink(filepath.Join(root, "secret"), filepath.Join(logdir, "linked")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(logdir, "exp", "sneaky"), 0o755)
	os.Symlink(filepath.Join(outside, "result.json"), filepath.Join(logdir, "exp", "sneaky", "result.json"))
	os.Symlink(filepath.Join(outside, "config.json"), filepath.Join(logdir, "exp", "sneaky", "config.json"))

	srv := testServer(t, Options{LogDir: logdir})
	h := srv.Handler()
	runs := get(t, h, "/api/runs").Body.String()
	if !strings.Contains(runs, `"exp/ok"`) || strings.Contains(runs, "666") || strings.Contains(runs, "linked") || strings.Contains(runs, "sneaky") {
		t.Errorf("runs list: %s", runs)
	}
	for _, u := range []string{
		"/api/run?id=../secret/run", "/api/run?id=" + outside, "/api/run?id=linked/run", "/api/series?run=linked/run",
		"/api/csv?run=..%2Fsecret%2Frun", "/api/run?id=exp/sneaky", "/api/sweep?id=..",
		"/static/../../secret/run/config.json", "/static/..%2F..%2Fsecret%2Frun%2Fconfig.json", "/static/" + outside + "/config.json",
	} {
		rec := get(t, h, u)
		if body := rec.Body.String(); rec.Code == http.StatusOK || strings.Contains(body, "hunter2") || strings.Contains(body, "666") {
			t.Errorf("GET %s: %d %s", u, rec.Code, body)
		}
	}
}

func TestTokenNeededOffLoopback(t *testing.T) {
	srv := testServer(t, Options{LogDir: t.TempDir(), Host: "0.0.0.0"})
	tok := srv.token
	if len(tok) < 32 || !strings.HasSuffix(srv.URL(), "?token="+tok) {
		t.Fatalf("token %q, URL %s", tok, srv.URL())
	}
	h := srv.Handler()
	cases := []struct {
		name string
		url  string
		hdr  []string
		want int
	}{
		{"no token", "/api/runs", nil, http.StatusUnauthorized},
		{"page without token", "/", nil, http.StatusUnauthorized},
		{"wrong token", "/api/runs?token=00", nil, http.StatusUnauthorized},
		{"token in URL", "/?token=" + tok, nil, http.StatusOK},
		{"token cookie", "/api/runs", []string{"Cookie", srv.tokenCookie() + "=" + tok}, http.StatusOK},
		{"wrong cookie", "/api/runs", []string{"Cookie", srv.tokenCookie() + "=x"}, http.StatusUnauthorized},
		{"token header", "/api/runs", []string{"X-Gray-Token", tok}, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, c.url, nil)
			req.Host = "example.org:8265"
			for i := 0; i+1 < len(c.hdr); i += 2 {
				req.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("%s: %d, want %d", c.url, rec.Code, c.want)
			}
		})
	}
}

func TestLoopbackRefusesForeignHosts(t *testing.T) {
	srv := testServer(t, Options{LogDir: t.TempDir()})
	if srv.token != "" || strings.Contains(srv.URL(), "token") {
		t.Fatalf("loopback server has a token: %s", srv.URL())
	}
	for host, want := range map[string]int{"127.0.0.1:8265": 200, "localhost:8265": 200, "[::1]:8265": 200, "evil.example:8265": 403} {
		req := httptest.NewRequest(http.MethodGet, "/api/info", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

// writeSweep writes a Tune experiment folder as tune does: experiment.json,
// journal.jsonl and one run folder per trial.
func writeSweep(t testing.TB, dir string, trials, results int, scheduler string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, experimentFile), []byte(`{"format":"gray-tune/1","name":"s","metric":"episode_reward_mean","mode":"max","searcher":"*tune.BasicVariantGenerator","scheduler":"`+scheduler+`"}`), 0o644)
	var j bytes.Buffer
	for i := 0; i < trials; i++ {
		id := fmt.Sprintf("%05d", i)
		tdir := "trial_" + id
		fmt.Fprintf(&j, `{"e":"created","trial":"%s","config":{"lr":%g,"batch":%d,"fixed":1},"dir":"%s"}`+"\n", id, 0.001*float64(i+1), 64<<(i%3), tdir)
		fmt.Fprintf(&j, `{"e":"status","trial":"%s","status":"RUNNING"}`+"\n", id)
		os.MkdirAll(filepath.Join(dir, tdir), 0o755)
		var r bytes.Buffer
		n := results
		if i%4 == 1 {
			n = results / 2 // stopped early
		}
		for k := 1; k <= n; k++ {
			line := fmt.Sprintf(`{"training_iteration":%d,"timesteps_total":%d,"episode_reward_mean":%g,"time_total_s":%g,"episode_len_mean":%d,"info":{"learner":{"kl":0.01,"entropy":0.6,"policy_loss":-0.01,"vf_loss":3.2}},"done":false,"timestamp":1764000000,"hostname":"h","pid":1}`,
				k, k*1000, float64(i)+float64(k)/10, float64(k)*0.5, k)
			r.WriteString(line + "\n")
			fmt.Fprintf(&j, `{"e":"result","trial":"%s","result":%s}`+"\n", id, line)
		}
		os.WriteFile(filepath.Join(dir, tdir, resultFile), r.Bytes(), 0o644)
		status, errS := "TERMINATED", ""
		if i%4 == 3 {
			status, errS = "ERROR", "panic: boom\nstack..."
		}
		fmt.Fprintf(&j, `{"e":"checkpoint","trial":"%s","checkpoint":{"path":"%s/checkpoint_%06d"}}`+"\n", id, tdir, n)
		fmt.Fprintf(&j, `{"e":"status","trial":"%s","status":"%s","failures":%d,"error":%q}`+"\n", id, status, map[bool]int{true: 1}[errS != ""], errS)
	}
	j.WriteString("{not json\n")
	os.WriteFile(filepath.Join(dir, journalFile), j.Bytes(), 0o644)
}

func TestSweepTableSaysWhyTrialsStopped(t *testing.T) {
	logdir := t.TempDir()
	writeSweep(t, filepath.Join(logdir, "s"), 4, 8, "*tune.ASHA")
	srv := testServer(t, Options{LogDir: logdir})
	type resp struct {
		Params []string   `json:"params"`
		Trials []trialRow `json:"trials"`
		Best   *trialRow  `json:"best"`
		Bad    int        `json:"bad"`
	}
	r := decode[resp](t, get(t, srv.Handler(), "/api/sweep?id=s"))
	if strings.Join(r.Params, ",") != "batch,lr" {
		t.Errorf("searched params %v, want batch,lr (fixed is not searched)", r.Params)
	}
	want := []string{"completed at iteration 8", "stopped early by ASHA at iteration 4 (others reached 8)", "completed at iteration 8", "error after 1 failure(s): panic: boom"}
	for i, tr := range r.Trials {
		if tr.Reason != want[i] {
			t.Errorf("trial %s: reason %q, want %q", tr.ID, tr.Reason, want[i])
		}
	}
	if r.Best == nil || r.Best.ID != "00003" || !strings.HasSuffix(r.Best.Checkpoint, filepath.Join("s", "trial_00003", "checkpoint_000008")) {
		t.Errorf("best %+v", r.Best)
	}
	if r.Bad != 1 {
		t.Errorf("bad journal lines %d, want 1", r.Bad)
	}
}

// fakeRuntime is a synthetic session.
type fakeRuntime struct{ snap *Snapshot }

func (f fakeRuntime) Snapshot(context.Context) (*Snapshot, error) { return f.snap, nil }
func (f fakeRuntime) Timeline(context.Context) ([]TaskEvent, error) {
	var evs []TaskEvent
	for i := 0; i < 10; i++ {
		evs = append(evs, TaskEvent{TaskID: fmt.Sprintf("%032x", i), Func: "f", Worker: i % 2, Start: int64(i) * 1000, End: int64(i)*1000 + 900})
	}
	return evs, nil
}

func syntheticSnapshot(tasks, actors int) *Snapshot {
	s := &Snapshot{Nodes: []NodeInfo{{Name: "n", Total: map[string]float64{"CPU": 8}, Available: map[string]float64{"CPU": 2}}}}
	states := []string{"RUNNING", "SENT", "QUEUED"}
	for i := 0; i < tasks; i++ {
		s.Tasks = append(s.Tasks, TaskInfo{ID: fmt.Sprintf("%032x", i), Func: fmt.Sprintf("f%d", i%7), State: states[i%3], Worker: i % 8})
	}
	for i := 0; i < actors; i++ {
		s.Actors = append(s.Actors, ActorInfo{ID: fmt.Sprintf("a%031x", i), Type: "A", State: "ALIVE", Worker: i})
	}
	for i := 0; i < 8; i++ {
		s.Workers = append(s.Workers, WorkerInfo{ID: i, Name: fmt.Sprintf("worker %d", i)})
	}
	s.Errors = []ErrorInfo{{Function: "f", Message: "<b>boom</b>", Stack: "goroutine 1"}}
	return s
}

func TestRuntimeViewsPaginateAndSearch(t *testing.T) {
	srv := testServer(t, Options{LogDir: t.TempDir(), Runtime: fakeRuntime{syntheticSnapshot(250, 300)}})
	h := srv.Handler()
	type page struct {
		Total int               `json:"total"`
		Items []json.RawMessage `json:"items"`
	}
	if p := decode[page](t, get(t, h, "/api/runtime/tasks?offset=200&limit=100")); p.Total != 250 || len(p.Items) != 50 {
		t.Errorf("tasks page: total %d, %d items", p.Total, len(p.Items))
	}
	if p := decode[page](t, get(t, h, "/api/runtime/tasks?state=QUEUED&limit=1000")); p.Total != 83 {
		t.Errorf("queued tasks: %d, want 83", p.Total)
	}
	if p := decode[page](t, get(t, h, "/api/runtime/actors?limit=5000")); p.Total != 300 || len(p.Items) != 300 {
		t.Errorf("actors: total %d, %d items (limit caps at 1000)", p.Total, len(p.Items))
	}
	found := decode[struct {
		Tasks []TaskInfo `json:"tasks"`
	}](t, get(t, h, "/api/runtime/search?id="+fmt.Sprintf("%032x", 123)))
	if len(found.Tasks) == 0 || found.Tasks[0].ID != fmt.Sprintf("%032x", 123) {
		t.Errorf("search found %+v", found.Tasks)
	}
	if rec := get(t, h, "/api/runtime/search?id=ab"); rec.Code != http.StatusBadRequest {
		t.Errorf("a 2-character search: %d", rec.Code)
	}
}

func TestTraceIsChromeTraceFormat(t *testing.T) {
	srv := testServer(t, Options{LogDir: t.TempDir(), Runtime: fakeRuntime{syntheticSnapshot(1, 1)}})
	rec := get(t, srv.Handler(), "/api/timeline/trace")
	checkChromeTrace(t, rec.Body.Bytes(), 10, 2)
}

// checkChromeTrace checks a Chrome trace: an object whose traceEvents are
// complete events with name, ph, ts, dur, pid and tid, on threads workers.
func checkChromeTrace(t *testing.T, b []byte, minEvents, threads int) {
	t.Helper()
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, b)
	}
	tids := map[float64]bool{}
	for _, e := range tr.TraceEvents {
		for _, k := range []string{"name", "ph", "ts", "dur", "pid", "tid"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("event %v lacks %q", e, k)
			}
		}
		if e["ph"] != "X" || e["dur"].(float64) < 0 {
			t.Errorf("event %v", e)
		}
		tids[e["tid"].(float64)] = true
	}
	if len(tr.TraceEvents) < minEvents || len(tids) < threads {
		t.Errorf("%d events on %d threads, want >= %d on >= %d", len(tr.TraceEvents), len(tids), minEvents, threads)
	}
}

func TestMissingRuntimeIsExplained(t *testing.T) {
	srv := testServer(t, Options{LogDir: t.TempDir()})
	rec := get(t, srv.Handler(), "/api/runtime/summary")
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "--address") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
