package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/gray-ml/gray/platform/runlog"
	"github.com/gray-ml/gray/tune"
)

// The benchmarks measure the dashboard's targets (benchmarks/README.md,
// figures in benchmarks/results/dashboard.md), each beside a peer: what a
// reader that re-reads whole files (or serialises everything) pays for the
// same data.

var benchSweepDir string

// benchSweep writes a sweep of 1,000 trials with 100 results each, once.
func benchSweep(b *testing.B) string {
	b.Helper()
	if benchSweepDir == "" {
		dir, err := os.MkdirTemp("", "gray-dashboard-bench-")
		if err != nil {
			b.Fatal(err)
		}
		writeSweep(b, filepath.Join(dir, "s"), 1000, 100, "*tune.ASHA")
		benchSweepDir = dir
	}
	return benchSweepDir
}

// cpuTime is the process's user and system CPU time so far: on a loaded
// machine it says more than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU runs the benchmark loop body and reports CPU seconds per op.
func reportCPU(b *testing.B, body func()) {
	b.Helper()
	start, n := cpuTime(), 0
	for b.Loop() {
		body()
		n++
	}
	b.ReportMetric((cpuTime()-start).Seconds()/float64(n), "cpu-s/op")
}

func benchGet(b *testing.B, h http.Handler, u string) []byte {
	rec := get(b, h, u)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", u, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func newBenchServer(b *testing.B, opts Options) *Server {
	b.Helper()
	opts.Port = -1
	if opts.Interval == 0 {
		opts.Interval = time.Millisecond
	}
	srv, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return srv
}

// BenchmarkOpenSweep1000x100: a fresh server lists the folders, reads the
// journal and the last result of each trial and answers the sweep page.
func BenchmarkOpenSweep1000x100(b *testing.B) {
	dir := benchSweep(b)
	reportCPU(b, func() {
		srv := newBenchServer(b, Options{LogDir: dir})
		body := benchGet(b, srv.Handler(), "/api/sweep?id=s")
		if len(body) < 1000 {
			b.Fatal("short answer")
		}
		srv.Close()
	})
}

// BenchmarkOpenSweepPeerLoadTrials is the peer: tune.LoadTrials reads the
// whole journal (every result) to build the same table.
func BenchmarkOpenSweepPeerLoadTrials(b *testing.B) {
	dir := benchSweep(b)
	reportCPU(b, func() {
		ts, err := tune.LoadTrials(filepath.Join(dir, "s"))
		if err != nil || len(ts) != 1000 {
			b.Fatal(err)
		}
	})
}

// BenchmarkChart1000Runs: a fresh server answers the chart of one metric
// over 1,000 runs of 100 results (reading every result.json once).
func BenchmarkChart1000Runs(b *testing.B) {
	dir := benchSweep(b)
	q := url.Values{"keys": {"^episode_reward_mean$"}, "x": {"timesteps_total"}}
	for i := 0; i < 1000; i++ {
		q.Add("run", fmt.Sprintf("s/trial_%05d", i))
	}
	u := "/api/series?" + q.Encode()
	reportCPU(b, func() {
		srv := newBenchServer(b, Options{LogDir: dir})
		body := benchGet(b, srv.Handler(), u)
		if len(body) < 100000 {
			b.Fatalf("short answer: %d bytes", len(body))
		}
		srv.Close()
	})
}

// BenchmarkChart1000RunsPeerReadResults is the peer: runlog.ReadResults
// on the 1,000 folders (what a reader that re-reads whole files pays on
// every update).
func BenchmarkChart1000RunsPeerReadResults(b *testing.B) {
	dir := benchSweep(b)
	reportCPU(b, func() {
		for i := 0; i < 1000; i++ {
			if _, err := runlog.ReadResults(filepath.Join(dir, "s", fmt.Sprintf("trial_%05d", i))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRuntimeViews: the runtime pages' requests with 10,000 tasks and
// 20,000 actors in the session; reports the 95th percentile latency.
func BenchmarkRuntimeViews(b *testing.B) {
	srv := newBenchServer(b, Options{LogDir: b.TempDir(), Runtime: fakeRuntime{syntheticSnapshot(10000, 20000)}})
	h := srv.Handler()
	urls := []string{"/api/runtime/summary", "/api/runtime/tasks?offset=9000&limit=50", "/api/runtime/tasks?state=QUEUED&limit=50",
		"/api/runtime/actors?offset=15000&limit=50", "/api/runtime/errors", "/api/runtime/search?id=0000000000000000000000000000270f"}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		benchGet(b, h, urls[i%len(urls)])
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkRuntimeViewsPeerFullJSON is the peer: serialising the whole
// snapshot, as an API without pagination would on every request.
func BenchmarkRuntimeViewsPeerFullJSON(b *testing.B) {
	s := syntheticSnapshot(10000, 20000)
	for b.Loop() {
		if _, err := json.Marshal(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryWhileRunsWrite: 100 runs keep writing while pages ask for
// the runs table and the charts of 10 runs; reports the live heap at the
// start and at the end, and the process's total memory from the OS.
func BenchmarkMemoryWhileRunsWrite(b *testing.B) {
	dir := b.TempDir()
	const runs = 100
	files := make([]*os.File, runs)
	for i := range files {
		d := filepath.Join(dir, "exp", fmt.Sprintf("run_%03d", i))
		os.MkdirAll(d, 0o755)
		f, err := os.Create(filepath.Join(d, resultFile))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	srv := newBenchServer(b, Options{LogDir: dir})
	h := srv.Handler()
	chart := "/api/series?keys=reward"
	for i := 0; i < 10; i++ {
		chart += fmt.Sprintf("&run=exp/run_%03d", i)
	}
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	iter := 0
	write := func(n int) {
		for k := 0; k < n; k++ {
			iter++
			for _, f := range files {
				fmt.Fprintf(f, `{"training_iteration":%d,"timesteps_total":%d,"episode_reward_mean":%g,"info":{"learner":{"kl":0.01,"entropy":0.5}},"done":false}`+"\n", iter, iter*1000, float64(iter)/3)
			}
		}
	}
	write(10)
	benchGet(b, h, "/api/runs")
	benchGet(b, h, chart)
	start := heap()
	for b.Loop() {
		write(10)
		time.Sleep(2 * time.Millisecond)
		benchGet(b, h, "/api/runs")
		benchGet(b, h, chart)
	}
	end := heap()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(start, "heap-start-MB")
	b.ReportMetric(end, "heap-end-MB")
	b.ReportMetric(float64(m.Sys)/(1<<20), "sys-MB")
	b.ReportMetric(float64(iter), "results/run")
}

// chromiumCPU is the CPU time this process's chromium has used so far:
// its processes (descendants of this one, found in /proc), with the time
// of those that ended counted in their parent's cutime. Other programs'
// chromium on a shared machine is not counted, nor the renderer of the
// browser's own WebUI (Chromium 156's omnibox popup, which in headless
// mode burns about a quarter of a core while idle: time, not pages). 0
// where there is none.
func chromiumCPU() time.Duration {
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		lo, hi := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if lo < 0 || hi < lo {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:lo]))
		f := strings.Fields(s[hi+1:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline")); strings.Contains(string(cmd), "--top-chrome-webui") {
			procs[pid] = proc{ppid: ppid}
			continue
		}
		var ticks int64
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
		procs[pid] = proc{ppid: ppid, cpu: time.Duration(ticks) * 10 * time.Millisecond} // USER_HZ = 100
	}
	self := os.Getpid()
	var total time.Duration
	for _, p := range procs {
		for up, n := p.ppid, 0; up > 1 && n < 64; up, n = procs[up].ppid, n+1 {
			if up == self {
				total += p.cpu
				break
			}
		}
	}
	return total
}

// reportBrowserCPU reports what one operation cost: the CPU seconds of
// this process (server and DevTools client) and of its chromium, which on
// a loaded machine say more than the wall clock; the page's own time from
// navigation to drawn (its first ready marker, by the page's clock); and
// what chromium's main thread spent in script, and in style and layout
// (the DevTools Performance domain).
func reportBrowserCPU(b *testing.B, ctx context.Context, body func()) {
	b.Helper()
	var fig pageFigures
	goStart, chStart, n := cpuTime(), chromiumCPU(), 0
	for b.Loop() {
		b.StopTimer()
		before := browserMetrics(b, ctx) // counted since enabling, for the tab's renderer
		b.StartTimer()
		body()
		n++
		b.StopTimer()
		// A body that leaves the page drawn has none of its figures to read.
		if drawn := eval[float64](b, ctx, `window.grayFirstDrawn || 0`); drawn > 0 {
			fig.add(b, ctx, drawn, before)
		}
		b.StartTimer()
	}
	fig.report(b, n, (cpuTime() - goStart).Seconds(), (chromiumCPU() - chStart).Seconds())
}

// browserMetrics reads the DevTools Performance domain's counters of the
// tab's renderer.
func browserMetrics(b *testing.B, ctx context.Context) map[string]float64 {
	b.Helper()
	var m []*performance.Metric
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, performance.Enable, performance.EnableParams{}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, tg, performance.GetMetrics, cdp.Empty{})
		m = res.Metrics
		return err
	})); err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, x := range m {
		out[x.Name] = x.Value
	}
	return out
}

// pageFigures sums what the pages of a benchmark reported: their own time
// to drawn, and what chromium's main thread spent on them.
type pageFigures struct {
	pageMs, script, styleLayout, thread float64
	pages, threadPages                  int
}

// add counts one page drawn drawnMs after its navigation, with the
// renderer's counters as they were before it.
func (f *pageFigures) add(b *testing.B, ctx context.Context, drawnMs float64, before map[string]float64) {
	m := browserMetrics(b, ctx)
	d := func(k string) float64 { return m[k] - before[k] }
	f.pageMs += drawnMs
	f.pages++
	// A navigation that moved the tab to another renderer process starts
	// its counters again: nothing to tell of that page's main thread.
	if d("ThreadTime") >= 0 && d("ScriptDuration") >= 0 {
		f.script += d("ScriptDuration")
		f.styleLayout += d("RecalcStyleDuration") + d("LayoutDuration")
		f.thread += d("ThreadTime")
		f.threadPages++
	}
	if os.Getenv("GRAY_BENCH_METRICS") != "" {
		b.Logf("metrics: %v", m)
	}
}

// report reports the figures of n operations that cost this process
// goCPU and its chromium chCPU seconds: CPU seconds, which on a loaded
// machine say more than the wall clock; the pages' own time from
// navigation to drawn (by the page's clock); and what chromium's main
// thread spent in script, and in style and layout.
func (f *pageFigures) report(b *testing.B, n int, goCPU, chCPU float64) {
	ops := float64(n)
	b.ReportMetric((goCPU+chCPU)/ops, "cpu-s/op")
	b.ReportMetric(goCPU/ops, "go-cpu-s/op")
	b.ReportMetric(chCPU/ops, "chromium-cpu-s/op")
	if f.pages > 0 {
		b.ReportMetric(f.pageMs/float64(f.pages), "page-ms/op")
	}
	if p := float64(f.threadPages); p > 0 {
		b.ReportMetric(f.script*1000/p, "script-ms/op")
		b.ReportMetric(f.styleLayout*1000/p, "style+layout-ms/op")
		b.ReportMetric(f.thread*1000/p, "main-thread-cpu-ms/op")
	}
}

// browserServer starts a dashboard over dir for one browser measurement
// and returns its URL and a function that stops it. It has read nothing
// yet: a page opened against it includes the server's cold read (of
// files the OS has cached). It looks at the files at gray dashboard's
// pace (once a second), as a user's would.
func browserServer(b *testing.B, dir string) (string, func()) {
	b.Helper()
	srv := newBenchServer(b, Options{LogDir: dir, Interval: time.Second})
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx) }()
	return srv.URL(), func() { cancel(); <-done }
}

// BenchmarkBrowserOpenSweep1000x100 times the sweep page in chromium,
// from navigation to the drawn table and parallel coordinates: "warm"
// against a server that has read the files already
// (BenchmarkOpenSweep1000x100 times that read), "cold" against a server
// started for each operation.
func BenchmarkBrowserOpenSweep1000x100(b *testing.B) {
	dir := benchSweep(b)
	ctx, _ := newTab(b)
	load := func(u string) {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		open(b, ctx, u+"#/sweep?id=s", "sweep")
		if c := eval[string](b, ctx, `document.getElementById("trialcount").textContent`); c != "1000 of 1000" {
			b.Fatalf("trial count %q", c)
		}
	}
	b.Run("warm", func(b *testing.B) {
		u, stop := browserServer(b, dir)
		defer stop()
		load(u) // the server's read, and chromium's first compile of the page
		reportBrowserCPU(b, ctx, func() { load(u) })
	})
	b.Run("cold", func(b *testing.B) {
		reportBrowserCPU(b, ctx, func() {
			u, stop := browserServer(b, dir)
			load(u)
			b.StopTimer() // leaving the page and stopping the server are not part of its time
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				b.Fatal(err) // before the server stops, so the page does not see it go
			}
			stop()
			b.StartTimer()
		})
	})
}

// BenchmarkBrowserChart1000Runs times the chart of 1,000 runs' metric in
// chromium, from navigation to the drawn curves: "warm" against a server
// that has read the files already (BenchmarkChart1000Runs times that
// read), "cold" against a server started for each operation.
func BenchmarkBrowserChart1000Runs(b *testing.B) {
	dir := benchSweep(b)
	ctx, _ := newTab(b)
	q := ""
	for i := 0; i < 1000; i++ {
		q += fmt.Sprintf("&run=s/trial_%05d", i)
	}
	load := func(u string) {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		open(b, ctx, u+"#/chart?"+q[1:], "chart")
		waitJS(b, ctx, `document.querySelectorAll('.chart[data-key="episode_reward_mean"] path.series').length === 1000`)
	}
	b.Run("warm", func(b *testing.B) {
		u, stop := browserServer(b, dir)
		defer stop()
		load(u)
		reportBrowserCPU(b, ctx, func() { load(u) })
	})
	b.Run("cold", func(b *testing.B) {
		reportBrowserCPU(b, ctx, func() {
			u, stop := browserServer(b, dir)
			load(u)
			b.StopTimer() // leaving the page and stopping the server are not part of its time
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				b.Fatal(err) // before the server stops, so the page does not see it go
			}
			stop()
			b.StartTimer()
		})
	})
}
