package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser tests of the defects reported in issue 25 that only the page
// shows. They wait for the page's own markers (data-ready, and cells the
// server's data fills), never for a guessed time.

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserRunsPageKeepsFocusAndScrollOnLiveUpdates(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	for i := 0; i < 400; i++ {
		writeRun(t, logdir, fmt.Sprintf("exp%d/run%03d", i%4, i), resultLine(1, float64(i)))
	}
	live := filepath.Join(writeRun(t, logdir, "exp0/live", resultLine(1, 1)), resultFile)
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/runs", "runs")
	if err := chromedp.Do(ctx, chromedp.SendKeys("#runfilter", "exp0")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.getElementById("runcount").textContent.startsWith("101 of")`)
	// Halfway down what is drawn (the first draw fills the box and a margin
	// below it, however tall a row is on this machine's fonts).
	eval[bool](t, ctx, `(() => { const w = document.querySelector("#runtable .tablewrap"); w.scrollTop = Math.round((w.scrollHeight - w.clientHeight) / 2); return true })()`)
	scrolled := eval[float64](t, ctx, `document.querySelector("#runtable .tablewrap").scrollTop`)
	if scrolled < 150 {
		t.Fatalf("the runs table does not scroll (scrollTop %v): make the fixture longer", scrolled)
	}
	// The live run writes; the page shows its new metric.
	appendLine(t, live, resultLine(2, 4242))
	waitJS(t, ctx, `(() => { const c = document.querySelector('tr[data-run="exp0/live"] .metric'); return c !== null && c.textContent === "4242" })()`)
	if id := eval[string](t, ctx, `document.activeElement.id`); id != "runfilter" {
		t.Errorf("after a live update the focus is on %q, want the filter box", id)
	}
	if got := eval[float64](t, ctx, `document.querySelector("#runtable .tablewrap").scrollTop`); got != scrolled {
		t.Errorf("after a live update the table scrolled from %v to %v", scrolled, got)
	}
	// Typing goes on where it was.
	if err := chromedp.Do(ctx, chromedp.KeyEvent("3")); err != nil {
		t.Fatal(err)
	}
	if v := eval[string](t, ctx, `document.getElementById("runfilter").value`); v != "exp03" {
		t.Errorf("filter box holds %q after typing exp0, an update, then 3; want exp03", v)
	}
}

func TestBrowserConstantSeriesStayFlatWhenSmoothed(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	var lines []string
	for i := 1; i <= 60; i++ {
		lines = append(lines, fmt.Sprintf(`{"training_iteration": %d, "episode_reward_mean": %d, "info": {"learner": {"cur_lr": 0.001}}}`, i, i*i%17))
	}
	writeRun(t, logdir, "exp/lr", lines...)
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/chart?run=exp/lr", "chart")
	if s := eval[string](t, ctx, `document.getElementById("smooth").value`); s != "0.6" {
		t.Fatalf("smoothing %s, want the default 0.6", s)
	}
	chart := `document.querySelector('.chart[data-key="info/learner/cur_lr"]')`
	ys := eval[[]string](t, ctx, `[...new Set(`+chart+`.querySelector("path.series").getAttribute("d").slice(1).split("L").map(p => p.split(",")[1]))]`)
	if len(ys) != 1 {
		t.Errorf("constant series drawn at %d heights (%v), want one flat line", len(ys), ys)
	}
	labels := eval[[]string](t, ctx, `[...`+chart+`.querySelectorAll("text.ytick")].map(t => t.textContent)`)
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			t.Errorf("y tick %q repeats: %v", l, labels)
		}
		seen[l] = true
	}
	// The varying series is still smoothed (its faint raw line is drawn).
	if n := eval[int](t, ctx, `document.querySelectorAll('.chart[data-key="episode_reward_mean"] path').length`); n < 3 {
		t.Errorf("episode_reward_mean has %d paths, want the raw and the smoothed line and the axis", n)
	}
}

func TestBrowserTooltipOfTheRightChartStaysInThePage(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	var ids []string
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("exp/a_rather_long_run_name_that_is_forty_%d", i)
		ids = append(ids, "run="+id)
		var lines []string
		for k := 1; k <= 20; k++ {
			lines = append(lines, fmt.Sprintf(`{"training_iteration": %d, "episode_reward_mean": %d.123456, "zz_last": %d.5}`, k, k*(i+1), k))
		}
		writeRun(t, logdir, id, lines...)
	}
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/chart?"+strings.Join(ids, "&"), "chart")
	// The right-most chart in the first row, hovered near its right edge.
	over := eval[[]float64](t, ctx, `(() => {
		const boxes = [...document.querySelectorAll(".chart")];
		const top = Math.min(...boxes.map(b => b.getBoundingClientRect().top));
		const row = boxes.filter(b => b.getBoundingClientRect().top === top);
		const box = row[row.length - 1], s = box.querySelector("svg"), r = s.getBoundingClientRect();
		s.dispatchEvent(new MouseEvent("mousemove", {clientX: r.right - 3, clientY: r.top + 40, bubbles: true}));
		const tip = box.querySelector(".tip").getBoundingClientRect();
		return [document.documentElement.scrollWidth, window.innerWidth, tip.right, row.length];
	})()`)
	if over[3] < 2 {
		t.Fatalf("only %v chart per row: the window is too narrow for this test", over[3])
	}
	if over[0] > over[1] || over[2] > over[1] {
		t.Errorf("hover tip widens the page: scrollWidth %v, tip right %v, window %v", over[0], over[2], over[1])
	}
}

func TestBrowserSweepsListSorts(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	for i, n := range []int{3, 9, 5} {
		writeSweep(t, filepath.Join(logdir, fmt.Sprintf("sweep%d", i)), n, 2, "*tune.FIFO")
	}
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/sweeps", "sweeps")
	trials := `[...document.querySelectorAll("#main tbody tr")].map(tr => Number(tr.children[1].textContent))`
	click := `(() => { [...document.querySelectorAll("#main th")].find(th => th.textContent.startsWith("Trials")).click(); return true })()`
	eval[bool](t, ctx, click)
	if got := fmt.Sprint(eval[[]int](t, ctx, trials)); got != "[3 5 9]" {
		t.Errorf("after one click on Trials: %s, want [3 5 9]", got)
	}
	eval[bool](t, ctx, click)
	if got := fmt.Sprint(eval[[]int](t, ctx, trials)); got != "[9 5 3]" {
		t.Errorf("after two clicks on Trials: %s, want [9 5 3]", got)
	}
}

// oddTimes is a session whose tasks start at odd microseconds, as real
// ones do.
type oddTimes struct{ fakeRuntime }

func (o oddTimes) Timeline(ctx context.Context) ([]TaskEvent, error) {
	evs, err := o.fakeRuntime.Timeline(ctx)
	for i := range evs {
		evs[i].Start += 1764000000123457 + int64(i)*317
		evs[i].End += 1764000000123457 + int64(i)*317
	}
	return evs, err
}

// The smaller things: log-axis labels, round timeline ticks, parallel
// coordinates that neither clip nor hide their log scale.
func TestBrowserAxesAreReadable(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	writeSweep(t, filepath.Join(logdir, "wide"), 102, 2, "*tune.FIFO") // lr 0.001 … 0.102: log scale
	srv := serve(t, Options{LogDir: logdir, Runtime: oddTimes{fakeRuntime{syntheticSnapshot(3, 3)}}})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/sweep?id=wide", "sweep")
	if n := eval[int](t, ctx, `ticks(18, 466, 4, true).length`); n < 3 {
		t.Errorf("a log axis over 18–466 gets %d labels, want at least 3", n)
	}
	if title := eval[string](t, ctx, `document.querySelector('#pcsvg g[data-dim="lr"] .dimtitle').textContent`); !strings.Contains(title, "log") {
		t.Errorf("lr axis title %q does not say it is logarithmic", title)
	}
	outside := eval[[]string](t, ctx, `(() => { const s = document.getElementById("pcsvg"), w = s.viewBox.baseVal.width;
		return [...s.querySelectorAll("text")].filter(t => { const b = t.getBBox(); return b.x < 0 || b.x + b.width > w; }).map(t => t.textContent); })()`)
	if len(outside) > 0 {
		t.Errorf("parallel-coordinate labels cut at the edges: %q", outside)
	}
	open(t, ctx, srv.URL()+"#/timeline", "timeline")
	labels := eval[[]string](t, ctx, `[...document.querySelectorAll("#tlsvg text.tltick")].map(t => t.textContent)`)
	if len(labels) < 3 {
		t.Fatalf("timeline ticks %q", labels)
	}
	for _, l := range labels {
		v := strings.TrimSuffix(l, " ms")
		if strings.Contains(v, ".") && len(strings.TrimRight(strings.SplitN(v, ".", 2)[1], "0")) > 1 || !strings.HasSuffix(l, " ms") {
			t.Errorf("timeline tick %q is not a round number of ms (all: %q)", l, labels)
		}
	}
}

func TestBrowserLongTablesDrawMoreOnScroll(t *testing.T) {
	browserCtx(t)
	logdir := t.TempDir()
	for i := 0; i < 450; i++ {
		writeRun(t, logdir, fmt.Sprintf("exp/run%03d", i), resultLine(1, float64(i)))
	}
	srv := serve(t, Options{LogDir: logdir})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/runs", "runs")
	rows := `document.querySelectorAll("#runtable tbody tr").length`
	// The first draw fills the table's box and a scroll margin below it,
	// and leaves the rest for later.
	first := eval[int](t, ctx, rows)
	box := eval[[]float64](t, ctx, `(() => { const w = document.querySelector("#runtable .tablewrap"); return [w.scrollHeight, w.clientHeight]; })()`)
	if first >= 450 || box[0] < box[1]+300 {
		t.Errorf("first draw: %d of 450 rows, %v px high in a box of %v px; want some, filling the box and 300 px more", first, box[0], box[1])
	}
	// Each scroll to the end draws more, until all are drawn.
	for n := first; n < 450; n = eval[int](t, ctx, rows) {
		eval[bool](t, ctx, `(() => { const w = document.querySelector("#runtable .tablewrap"); w.scrollTop = w.scrollHeight; w.dispatchEvent(new Event("scroll")); return true })()`)
		waitJS(t, ctx, fmt.Sprintf(`%s > %d`, rows, n))
	}
	// Sorting keeps what was drawn, and sorts all rows, not the drawn ones.
	eval[bool](t, ctx, `(() => { [...document.querySelectorAll("#runtable th")].find(th => th.textContent === "Run").click(); [...document.querySelectorAll("#runtable th")].find(th => th.textContent === "Run").click(); return true })()`)
	if n, first := eval[int](t, ctx, rows), eval[string](t, ctx, `document.querySelector("#runtable tbody tr").dataset.run`); n != 450 || first != "exp/run449" {
		t.Errorf("after sorting by name, descending: %d rows, first %q; want 450, exp/run449", n, first)
	}
}
