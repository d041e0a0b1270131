package dashboard

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Tests of the defects reported in issue 25 that the API shows; the page's
// own are in defects_browser_test.go.

// writeRun writes a run folder under logdir with the given result lines.
func writeRun(t testing.TB, logdir, id string, lines ...string) string {
	t.Helper()
	dir := filepath.Join(logdir, filepath.FromSlash(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimSuffix(l, "\n") + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, resultFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDeletedRunIsForgotten(t *testing.T) {
	logdir := t.TempDir()
	dir := writeRun(t, logdir, "exp/gone", resultLine(1, 10), resultLine(2, 20))
	writeRun(t, logdir, "exp/kept", resultLine(1, 5))
	srv := testServer(t, Options{LogDir: logdir})
	h := srv.Handler()
	if body := get(t, h, "/api/runs").Body.String(); !strings.Contains(body, "exp/gone") {
		t.Fatalf("run not listed before deletion: %s", body)
	}
	get(t, h, "/api/series?run=exp/gone") // loaded, as an open chart would
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"/api/run?id=exp/gone", "/api/csv?run=exp/gone", "/api/series?run=exp/gone"} {
		if rec := get(t, h, u); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s after the folder was deleted: %d, want 404", u, rec.Code)
		}
	}
	if body := get(t, h, "/api/runs").Body.String(); strings.Contains(body, "exp/gone") || !strings.Contains(body, "exp/kept") {
		t.Errorf("runs list after deleting exp/gone: %s", body)
	}
}

func TestLinkSwappedInAfterIndexingIsRefused(t *testing.T) {
	root := t.TempDir()
	logdir := filepath.Join(root, "logs")
	secret := writeRun(t, root, "secret/run", resultLine(1, 666), resultLine(2, 666))
	fileRun := writeRun(t, logdir, "exp/file", resultLine(1, 1))
	dirRun := writeRun(t, logdir, "exp/dir", resultLine(1, 2))
	srv := testServer(t, Options{LogDir: logdir})
	h := srv.Handler()
	for _, id := range []string{"exp/file", "exp/dir"} {
		if rec := get(t, h, "/api/csv?run="+id); rec.Code != http.StatusOK {
			t.Fatalf("csv of %s before the swap: %d %s", id, rec.Code, rec.Body)
		}
	}
	// Swap result.json of one run, and the other run's whole folder, for
	// links out of the log dir.
	swapInLinks(t, secret, fileRun, dirRun)
	for _, id := range []string{"exp/file", "exp/dir"} {
		for _, u := range []string{"/api/csv?run=" + id, "/api/series?run=" + id, "/api/run?id=" + id} {
			rec := get(t, h, u)
			if rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), "666") {
				t.Errorf("GET %s after a link out was swapped in: %d %s", u, rec.Code, rec.Body)
			}
		}
	}
	if body := get(t, h, "/api/runs").Body.String(); strings.Contains(body, "666") {
		t.Errorf("runs list shows the linked file's values: %s", body)
	}
}

// swapInLinks replaces fileRun's result.json, and the whole of dirRun,
// with links to the run folder secret outside the log dir.
func swapInLinks(t *testing.T, secret, fileRun, dirRun string) {
	t.Helper()
	os.Remove(filepath.Join(fileRun, resultFile))
	if err := os.Symlink(filepath.Join(secret, resultFile), filepath.Join(fileRun, resultFile)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(dirRun)
	if err := os.Symlink(secret, dirRun); err != nil {
		t.Fatal(err)
	}
}

func TestTwoDashboardsOnOneHostKeepTheirTokens(t *testing.T) {
	a := serve(t, Options{LogDir: t.TempDir(), Token: "token-of-a"})
	b := serve(t, Options{LogDir: t.TempDir(), Token: "token-of-b"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	status := func(u string) int {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	base := func(s *Server) string { return strings.TrimSuffix(s.URL(), "?token="+s.token) }
	// A browser opens both printed URLs, then keeps using both pages.
	if st := status(a.URL()); st != http.StatusOK {
		t.Fatalf("A with its token: %d", st)
	}
	if st := status(b.URL()); st != http.StatusOK {
		t.Fatalf("B with its token: %d", st)
	}
	for _, s := range []*Server{a, b} {
		if st := status(base(s) + "api/runs"); st != http.StatusOK {
			t.Errorf("%s after opening both dashboards: %d, want 200 (one dashboard's cookie replaced the other's)", base(s), st)
		}
	}
}

func TestRunsListCountsMalformedLinesOfUnopenedRuns(t *testing.T) {
	logdir := t.TempDir()
	lines := []string{resultLine(1, 1)}
	for i := 0; i < 10; i++ {
		lines = append(lines, fmt.Sprintf(`{"training_iteration": %d, broken`, i))
	}
	lines = append(lines, resultLine(2, 2))
	writeRun(t, logdir, "exp/bad", lines...)
	srv := testServer(t, Options{LogDir: logdir})
	type runs struct {
		Runs []runRow `json:"runs"`
	}
	r := decode[runs](t, get(t, srv.Handler(), "/api/runs"))
	if len(r.Runs) != 1 || r.Runs[0].Bad != 10 || r.Runs[0].Metric == nil || *r.Runs[0].Metric != 2 {
		t.Errorf("runs list (never opened): %+v, want bad=10 and metric 2", r.Runs)
	}
}

func TestWhyStoppedNamesTheStopCriterion(t *testing.T) {
	logdir := t.TempDir()
	dir := filepath.Join(logdir, "s")
	writeSweep(t, dir, 4, 56, "*tune.ASHA")
	// Trial 0 met stop: {episode_reward_mean: 475} at iteration 19; the
	// others ran on to 56 (or 28, stopped by ASHA).
	writeFile(t, filepath.Join(dir, experimentFile), `{"format":"gray-tune/1","name":"s","metric":"episode_reward_mean","mode":"max","scheduler":"*tune.ASHA","stop":{"episode_reward_mean":475}}`)
	var lines []string
	for k := 1; k <= 19; k++ {
		lines = append(lines, fmt.Sprintf(`{"training_iteration":%d,"episode_reward_mean":%g}`, k, 25*float64(k)+4.39))
	}
	writeRun(t, dir, "trial_00000", lines...)
	srv := testServer(t, Options{LogDir: logdir})
	type resp struct {
		Trials []trialRow `json:"trials"`
	}
	r := decode[resp](t, get(t, srv.Handler(), "/api/sweep?id=s"))
	if got, want := r.Trials[0].Reason, "met the stop criterion episode_reward_mean 479.39 ≥ 475 at iteration 19"; got != want {
		t.Errorf("trial 0: %q, want %q", got, want)
	}
	if got := r.Trials[1].Reason; !strings.HasPrefix(got, "stopped early by ASHA at iteration 28") {
		t.Errorf("trial 1 (cut by ASHA): %q", got)
	}
}

// manyKeys is issue 25's result.json: a new key on each of its lines.
func manyKeys(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"training_iteration": %d, "step_%d/loss": %d}`, i+1, i, i)
	}
	return lines
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func TestNewKeyOnEveryLineStaysBounded(t *testing.T) {
	logdir := t.TempDir()
	writeRun(t, logdir, "exp/keys", manyKeys(5000)...)
	srv := testServer(t, Options{LogDir: logdir})
	before := heapInUse()
	rec := get(t, srv.Handler(), "/api/series?run=exp/keys")
	grown := int64(heapInUse()) - int64(before)
	type resp struct {
		Runs []struct {
			Series      map[string]any `json:"series"`
			KeysDropped int            `json:"keys_dropped"`
		} `json:"runs"`
	}
	r := decode[resp](t, rec)
	if n := len(r.Runs[0].Series); n > maxKeysPerRun+1 {
		t.Errorf("%d series in the answer, want at most %d", n, maxKeysPerRun+1)
	}
	if d := r.Runs[0].KeysDropped; d != 5000-maxKeysPerRun+1 {
		t.Errorf("keys_dropped = %d, want %d (the answer must say it cut)", d, 5000-maxKeysPerRun+1)
	}
	if rec.Body.Len() > 1<<20 {
		t.Errorf("answer of %d bytes for 5000 one-point keys", rec.Body.Len())
	}
	// Held after the answer: the run's columns. On main they were 5000
	// columns of 5000 numbers (200 MB).
	if grown > 32<<20 {
		t.Errorf("the server's heap grew %d MiB holding a 5000-key run", grown>>20)
	}
}

func TestLongSeriesAreDownsampledKeepingSpikes(t *testing.T) {
	logdir := t.TempDir()
	const n = 58000
	lines := make([]string, n)
	for i := range lines {
		v := float64(i % 100)
		if i == 31337 {
			v = 1e6 // one spike the chart must still show
		}
		lines[i] = fmt.Sprintf(`{"training_iteration": %d, "episode_reward_mean": %g}`, i+1, v)
	}
	writeRun(t, logdir, "exp/long", lines...)
	srv := testServer(t, Options{LogDir: logdir})
	type resp struct {
		Runs []struct {
			Series map[string]points `json:"series"`
		} `json:"runs"`
	}
	r := decode[resp](t, get(t, srv.Handler(), "/api/series?run=exp/long"))
	p := r.Runs[0].Series["episode_reward_mean"]
	if len(p.X) == 0 {
		t.Fatalf("no points for episode_reward_mean")
	}
	if len(p.X) > defaultPoints+2 || len(p.X) < defaultPoints/2 || p.N != n {
		t.Errorf("downsampled to %d points of %d, want about %d", len(p.X), p.N, defaultPoints)
	}
	spike := false
	for i := range p.Y {
		spike = spike || (p.Y[i] == 1e6 && p.X[i] == 31338)
		if i > 0 && p.X[i] <= p.X[i-1] {
			t.Fatalf("x not increasing at %d: %v then %v", i, p.X[i-1], p.X[i])
		}
	}
	if !spike || p.X[0] != 1 || p.X[len(p.X)-1] != n {
		t.Errorf("downsampling lost the spike (%v) or an end (%v, %v)", spike, p.X[0], p.X[len(p.X)-1])
	}
	full := decode[resp](t, get(t, srv.Handler(), "/api/series?run=exp/long&points=0")).Runs[0].Series["episode_reward_mean"]
	if len(full.X) != n {
		t.Errorf("points=0 gives %d points, want all %d", len(full.X), n)
	}
	if rec := get(t, srv.Handler(), "/api/series?run=exp/long&points=-3"); rec.Code != http.StatusBadRequest {
		t.Errorf("points=-3: %d", rec.Code)
	}
}

func TestCSVKeepsIntegersAndStrings(t *testing.T) {
	logdir := t.TempDir()
	writeRun(t, logdir, "exp/csv",
		`{"training_iteration": 1, "timestamp": 1795847230, "hostname": "node-a", "done": false, "lr": 0.0003, "info": {"phase": "warmup"}}`,
		`{"training_iteration": 2, "timestamp": 1795847231.25, "hostname": "node-a", "done": true, "lr": 1e-9}`)
	srv := testServer(t, Options{LogDir: logdir})
	rec := get(t, srv.Handler(), "/api/csv?run=exp/csv")
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv: %v %q", err, rows)
	}
	got := map[string][]string{}
	for j, k := range rows[0] {
		got[k] = []string{rows[1][j], rows[2][j]}
	}
	want := map[string][]string{
		"timestamp": {"1795847230", "1795847231.25"}, "hostname": {"node-a", "node-a"}, "done": {"false", "true"},
		"lr": {"0.0003", "1e-09"}, "info/phase": {"warmup", ""}, "training_iteration": {"1", "2"},
	}
	for k, w := range want {
		if strings.Join(got[k], ",") != strings.Join(w, ",") {
			t.Errorf("column %s = %q, want %q", k, got[k], w)
		}
	}
}

func TestErrorsSayTheirPrefixOnce(t *testing.T) {
	// A dashboard showing another's session, which is not there.
	gone := serve(t, Options{LogDir: t.TempDir()})
	base := gone.URL()
	srv := testServer(t, Options{LogDir: t.TempDir(), Runtime: RemoteRuntime{Base: base + "nothing-here/"}})
	for _, u := range []string{"/api/runtime/summary", "/api/timeline"} {
		rec := get(t, srv.Handler(), u)
		if body := rec.Body.String(); rec.Code != http.StatusBadGateway || strings.Count(body, "dashboard:") != 1 {
			t.Errorf("GET %s: %d %q, want 502 saying \"dashboard:\" once", u, rec.Code, body)
		}
	}
}

// A result.json written by Python (Ray Tune's, with RLlib's NaN mean
// reward before the first episode ends) is no malformed run: its NaN lines
// count as results, and their other values reach the list and the charts.
func TestRunsWithPythonsNaNAreNotMalformed(t *testing.T) {
	logdir := t.TempDir()
	writeRun(t, logdir, "tune/nan",
		`{"training_iteration": 1, "episode_reward_mean": NaN, "info": {"learner": {"kl": 0.5}}, "done": false}`,
		`{"training_iteration": 2, "episode_reward_mean": NaN, "info": {"learner": {"kl": Infinity}}, "done": false}`)
	srv := testServer(t, Options{LogDir: logdir})
	type runs struct {
		Runs []runRow `json:"runs"`
	}
	r := decode[runs](t, get(t, srv.Handler(), "/api/runs"))
	if len(r.Runs) != 1 || r.Runs[0].Bad != 0 || r.Runs[0].Iter == nil || *r.Runs[0].Iter != 2 {
		t.Fatalf("runs list: %+v, want bad=0 and iteration 2", r.Runs)
	}
	body := get(t, srv.Handler(), "/api/series?run=tune/nan").Body.String()
	if !strings.Contains(body, "info/learner/kl") || !strings.Contains(body, "training_iteration") {
		t.Errorf("series of a run with NaN lines lack its numbers: %.300s", body)
	}
}
