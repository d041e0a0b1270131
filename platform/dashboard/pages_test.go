package dashboard

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/platform/runlog"
)

// lastResult of a run folder, as written by train.
func lastOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	res, err := runlog.ReadResults(dir)
	if err != nil || len(res) == 0 {
		t.Fatalf("results of %s: %v", dir, err)
	}
	return res[len(res)-1]
}

func numberOf(t *testing.T, v any) float64 {
	t.Helper()
	f, ok := runlog.Numeric(v)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	return f
}

func TestBrowserRunsPage(t *testing.T) {
	f := trainFixture(t)
	srv := serve(t, Options{LogDir: f.logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/runs", "runs")
	// The run and the sweep's four trials are listed, with the metric
	// the run's last result holds.
	if n := eval[int](t, ctx, `document.querySelectorAll("#runtable tbody tr").length`); n != 5 {
		t.Errorf("runs table has %d rows, want 5 (1 run + 4 trials)", n)
	}
	name := filepath.Base(f.run)
	sel := fmt.Sprintf(`document.querySelector('tr[data-run=%q]')`, f.run)
	if got := eval[string](t, ctx, sel+`.querySelector(".runname").textContent`); got != name {
		t.Errorf("run name cell = %q, want %q", got, name)
	}
	want := numberOf(t, lastOf(t, filepath.Join(f.logdir, f.run))["episode_reward_mean"])
	cell := eval[string](t, ctx, sel+`.querySelector(".metric").textContent`)
	if got, err := strconv.ParseFloat(cell, 64); err != nil || math.Abs(got-want) > 1e-3*math.Abs(want) {
		t.Errorf("metric cell = %q, want %g", cell, want)
	}
	if st := eval[string](t, ctx, sel+`.querySelector(".st").textContent`); st != "TERMINATED" {
		t.Errorf("status = %q, want TERMINATED", st)
	}
	// The regex filter keeps matching names only.
	eval[bool](t, ctx, `(() => { const i = document.getElementById("runfilter"); i.value = "trial_0000[12]"; i.dispatchEvent(new Event("input")); return true })()`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#runtable tbody tr").length`); n != 2 {
		t.Errorf("filter trial_0000[12] leaves %d rows, want 2", n)
	}
	screenshot(t, ctx, "runs")
}

func TestBrowserRunChart(t *testing.T) {
	f := trainFixture(t)
	srv := serve(t, Options{LogDir: f.logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/chart?run="+f.run, "chart")
	last := lastOf(t, filepath.Join(f.logdir, f.run))
	path := `document.querySelector('.chart[data-key="episode_reward_mean"] path.series')`
	waitJS(t, ctx, path+` !== null`)
	if n := eval[string](t, ctx, path+`.dataset.points`); n != "3" {
		t.Errorf("episode_reward_mean chart has %s points, want 3", n)
	}
	got, _ := strconv.ParseFloat(eval[string](t, ctx, path+`.dataset.last`), 64)
	if want := numberOf(t, last["episode_reward_mean"]); math.Abs(got-want) > 1e-9 {
		t.Errorf("last point = %g, want %g", got, want)
	}
	// Nested learner statistics are charted under their flattened names.
	waitJS(t, ctx, `document.querySelector('.chart[data-key="info/learner/policy_loss"] path.series') !== null`)
	// x = timesteps, y = log: still three points.
	eval[bool](t, ctx, `(() => { const s = document.getElementById("xaxis"); s.value = "timesteps_total"; s.dispatchEvent(new Event("change")); return true })()`)
	waitJS(t, ctx, `document.body.dataset.ready === "chart" && document.querySelector('.chart[data-key="timesteps_total"] path.series') !== null`)
	eval[bool](t, ctx, `(() => { const s = document.getElementById("yscale"); s.value = "log"; s.dispatchEvent(new Event("change")); return true })()`)
	if n := eval[string](t, ctx, path+`.dataset.points`); n != "3" {
		t.Errorf("after x=timesteps, y=log: %s points, want 3", n)
	}
	// Hovering shows values.
	// (In one evaluation: a live update may redraw the charts between two.)
	tip := eval[string](t, ctx, `(() => { const box = document.querySelector('.chart[data-key="episode_reward_mean"]');
		const s = box.querySelector("svg"), r = s.getBoundingClientRect();
		s.dispatchEvent(new MouseEvent("mousemove", {clientX: r.right - 20, clientY: r.top + 40, bubbles: true}));
		return box.querySelector(".tip").textContent })()`)
	if want := filepath.Base(f.run)[:20]; !strings.Contains(tip, want) {
		t.Errorf("hover text %q does not name the run", tip)
	}
	// The CSV link downloads every result.
	if href := eval[string](t, ctx, `document.getElementById("csv").getAttribute("href")`); href == "" {
		t.Error("no CSV link")
	}
	screenshot(t, ctx, "run-chart")
}

func TestBrowserLiveRunGainsPoints(t *testing.T) {
	f := trainFixture(t)
	local := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, f.train, "--env", "CartPole-v1", "--alg", "PPO", "--seed", "2", "--num-cpus", "1",
		"--stop", `{"training_iteration": 400}`, "--config", `{"train_batch_size": 512, "sgd_minibatch_size": 64, "num_workers": 0}`,
		"--local-dir", local, "--name", "live")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	// Wait for the run's first result.
	var run string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(local, "live", "PPO_*", "result.json"))
		if len(dirs) == 1 {
			if st, err := os.Stat(dirs[0]); err == nil && st.Size() > 0 {
				run = "live/" + filepath.Base(filepath.Dir(dirs[0]))
				break
			}
		}
	}
	if run == "" {
		t.Fatal("the live run wrote no result in 60 s")
	}
	srv := serve(t, Options{LogDir: local})
	tab, _ := newTab(t)
	open(t, tab, srv.URL()+"#/chart?run="+run, "chart")
	path := `document.querySelector('.chart[data-key="episode_reward_mean"] path.series')`
	waitJS(t, tab, path+` !== null`)
	n0, _ := strconv.Atoi(eval[string](t, tab, path+`.dataset.points`))
	waitJS(t, tab, fmt.Sprintf(`(() => { const p = %s; return p !== null && Number(p.dataset.points) >= %d })()`, path, n0+2))
	screenshot(t, tab, "live-run")
}

func TestBrowserSweepTableSorts(t *testing.T) {
	f := trainFixture(t)
	srv := serve(t, Options{LogDir: f.logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/sweep?id="+f.sweep, "sweep")
	if n := eval[int](t, ctx, `document.querySelectorAll("#trials tbody tr").length`); n != 4 {
		t.Fatalf("trial table has %d rows, want 4", n)
	}
	metrics := `[...document.querySelectorAll("#trials tbody td.metric")].map(td => Number(td.textContent))`
	clickMetric := `(() => { [...document.querySelectorAll("#trials th")].find(th => th.textContent.startsWith("episode_reward_mean")).click(); return true })()`
	eval[bool](t, ctx, clickMetric)
	asc := eval[[]float64](t, ctx, metrics)
	eval[bool](t, ctx, clickMetric)
	desc := eval[[]float64](t, ctx, metrics)
	for i := 1; i < len(asc); i++ {
		if asc[i] < asc[i-1] || desc[i] > desc[i-1] {
			t.Fatalf("not sorted: ascending %v, descending %v", asc, desc)
		}
	}
	if len(desc) != 4 || desc[0] != asc[3] {
		t.Errorf("ascending %v and descending %v disagree", asc, desc)
	}
	// The best trial is the one with the highest metric, with a checkpoint
	// path that exists.
	best := eval[string](t, ctx, `document.getElementById("besttrial").textContent`)
	top := eval[string](t, ctx, `document.querySelector("#trials tbody tr").dataset.trial`)
	if best != top {
		t.Errorf("best trial %s, but the top of the descending table is %s", best, top)
	}
	cp := eval[string](t, ctx, `document.getElementById("bestcheckpoint").textContent`)
	if st, err := os.Stat(cp); err != nil || !st.IsDir() {
		t.Errorf("best checkpoint %q is not a folder: %v", cp, err)
	}
	// lr is the searched hyperparameter; every trial is a line of the
	// parallel coordinates.
	if n := eval[int](t, ctx, `document.querySelectorAll("#pcsvg path.tr").length`); n != 4 {
		t.Errorf("parallel coordinates have %d lines, want 4", n)
	}
	if !eval[bool](t, ctx, `[...document.querySelectorAll("#trials th")].some(th => th.textContent.startsWith("lr"))`) {
		t.Error("no lr column")
	}
	// Every finished trial says why it stopped.
	reasons := eval[[]string](t, ctx, `[...document.querySelectorAll("#trials tbody tr")].map(tr => tr.children[tr.children.length - 2].textContent)`)
	for _, r := range reasons {
		if !strings.HasPrefix(r, "met the stop criterion training_iteration 6 ≥ 6") && !strings.HasPrefix(r, "stopped early by ASHA") {
			t.Errorf("why stopped: %q", r)
		}
	}
	// The filter is a regular expression on any cell.
	eval[bool](t, ctx, `(() => { const i = document.getElementById("trialfilter"); i.value = "^0\\.003$"; i.dispatchEvent(new Event("input")); return true })()`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#trials tbody tr").length`); n != 1 {
		t.Errorf("filter ^0\\.003$ leaves %d trials, want 1 (lr = 0.003)", n)
	}
	screenshot(t, ctx, "sweep")
	// The trials' curves overlay on one chart each.
	q := ""
	for i := 0; i < 4; i++ {
		q += fmt.Sprintf("&run=%s/trial_%05d", f.sweep, i)
	}
	open(t, ctx, srv.URL()+"#/chart?"+q[1:], "chart")
	if n := eval[int](t, ctx, `document.querySelectorAll('.chart[data-key="episode_reward_mean"] path.series').length`); n != 4 {
		t.Errorf("overlay has %d curves, want 4", n)
	}
	screenshot(t, ctx, "overlay")
}

// TestBrowserEscapesNamesAndSurvivesBadResults: a run whose ID is
// <script>alert(1)</script>, whose config holds markup, whose result keys
// hold markup and whose result.json has malformed and half-written lines.
func TestBrowserEscapesNamesAndSurvivesBadResults(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	dir := filepath.Join(logdir, "<script>alert(1)<", "script>")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "config.json"), `{"note": "</pre><script>alert(2)</script><img src=x onerror=alert(3)>"}`)
	writeFile(t, filepath.Join(dir, "result.json"), `{"training_iteration": 1, "episode_reward_mean": 5, "<img src=x onerror=alert(4)>": 1}
{"training_iteration": 2, "episode_reward_mean":
not json at all
[1, 2, 3]
{"training_iteration": 3, "episode_reward_mean": 7, "<img src=x onerror=alert(4)>": 2}
{"training_iteration": 4, "episode_rew`)
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/runs", "runs")
	id := "<script>alert(1)</script>"
	row := fmt.Sprintf(`document.querySelector('tr[data-run=%q]')`, id)
	if got := eval[string](t, ctx, row+`.querySelector(".runname").textContent`); got != "script>" {
		t.Errorf("run name = %q", got)
	}
	if got := eval[string](t, ctx, row+`.querySelector(".metric").textContent`); got != "7" {
		t.Errorf("metric = %q, want 7 (the last whole line)", got)
	}
	if !eval[bool](t, ctx, onlyOwnScripts) {
		t.Errorf("the page has scripts or images besides its own: %s", eval[string](t, ctx, `document.documentElement.outerHTML`))
	}
	open(t, ctx, srv.URL()+"#/chart?run="+url.QueryEscape(id), "chart")
	if got := eval[string](t, ctx, `document.getElementById("config").textContent`); !strings.Contains(got, "</pre><script>alert(2)</script>") {
		t.Errorf("config shown as %q", got)
	}
	key := `document.querySelector('.chart[data-key="<img src=x onerror=alert(4)>"] path.series')`
	waitJS(t, ctx, key+` !== null`)
	if n := eval[string](t, ctx, key+`.dataset.points`); n != "2" {
		t.Errorf("chart of the markup key has %s points, want 2", n)
	}
	if !eval[bool](t, ctx, `document.querySelector(".box").textContent.includes("3 malformed lines skipped")`) {
		t.Errorf("malformed lines not reported: %q", eval[string](t, ctx, `document.querySelector(".box").textContent`))
	}
	if !eval[bool](t, ctx, onlyOwnScripts) {
		t.Error("the chart page has scripts or images besides its own")
	}
	// TensorBoard's smoothing: the first value unchanged, then the moving
	// average divided by 1 - w^n; non-finite values pass through.
	if got := eval[string](t, ctx, `JSON.stringify(smooth([5, 7, null, 9], 0.6))`); got != "[5,6.25,null,7.653061224489796]" {
		t.Errorf("smooth = %s", got)
	}
	screenshot(t, ctx, "escaping")
}

// onlyOwnScripts is true when the page runs only the dashboard's own
// scripts and shows no image: no injected markup took effect.
const onlyOwnScripts = `document.images.length === 0 && [...document.scripts].every(s => s.src.startsWith(location.origin + "/static/") && !s.text)`

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

var napTask = gray.Func1("dashboard_test.nap", func(ctx context.Context, ms int) (int, error) {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return ms, nil
})

var panicTask = gray.Func1("dashboard_test.panics", func(ctx context.Context, x int) (int, error) {
	panic(fmt.Sprintf("<b>boom %d</b>", x))
})

// TestBrowserTimelineAndRuntime runs tasks on a two-worker session and
// shows them on the timeline page and the runtime page.
func TestBrowserTimelineAndRuntime(t *testing.T) {
	browserCtx(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NumWorkers: 2, NoGPUs: true, LogDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	// Registered before the tab's cleanup, so it runs after the tab closed
	// (a page still polling a shut-down session would log errors).
	t.Cleanup(func() {
		if err := gray.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	refs := make([]gray.Ref[int], 8)
	for i := range refs {
		refs[i] = napTask.Remote(30)
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	if _, err := gray.Get(ctx, panicTask.Remote(1)); err == nil {
		t.Fatal("the panicking task succeeded")
	}
	srv := serve(t, Options{LogDir: t.TempDir(), Runtime: SessionRuntime{}})
	// What `gray timeline --address` fetches is a Chrome trace of the tasks.
	trace, err := RemoteRuntime{Base: srv.URL()}.Get(ctx, "api/timeline/trace", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkChromeTrace(t, trace, 8, 2)
	tab, _ := newTab(t)
	open(t, tab, srv.URL()+"#/timeline", "timeline")
	waitJS(t, tab, `document.querySelectorAll("#tlsvg rect.task").length >= 8`)
	workers := eval[int](t, tab, `new Set([...document.querySelectorAll("#tlsvg rect.task")].map(r => r.dataset.worker)).size`)
	if workers < 2 {
		t.Errorf("timeline shows tasks on %d workers, want 2", workers)
	}
	if !eval[bool](t, tab, `document.querySelector("#tlsvg rect.task title").textContent.includes("dashboard_test.nap")`) {
		t.Error("task bars do not name their function")
	}
	eval[bool](t, tab, `(() => { document.getElementById("zoomin").click(); return true })()`)
	screenshot(t, tab, "timeline")
	open(t, tab, srv.URL()+"#/runtime", "runtime")
	waitJS(t, tab, `[...document.querySelectorAll("#rt h3")].some(h => h.textContent === "Workers (2)")`)
	// Search finds an object by its ID.
	eval[bool](t, tab, fmt.Sprintf(`(() => { const i = document.getElementById("idsearch"); i.value = %q;
		i.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"})); return true })()`, refs[0].ID().String()))
	waitJS(t, tab, `document.querySelector("#found td") !== null && document.querySelector("#found td").textContent === "object"`)
	if got := eval[string](t, tab, `document.querySelector("#found tbody tr").children[3].textContent`); !strings.Contains(got, "bytes") {
		t.Errorf("object found as %q", got)
	}
	// The error log shows the failed task with its remote stack.
	waitJS(t, tab, `[...document.querySelectorAll("#rt h3")].some(h => h.textContent === "Errors (1)")`)
	if stack := eval[string](t, tab, `document.querySelector("#errors pre").textContent`); !strings.Contains(stack, "pages_test.go") {
		t.Errorf("remote stack %q does not show where the task panicked", stack)
	}
	screenshot(t, tab, "runtime")
}
