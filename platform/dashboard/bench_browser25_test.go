package dashboard

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Issue 25's goals, timed in chromium as a user sees them: from the
// navigation's start to the first frame drawn with the page's content,
// against a server that has read the files already: the runs list of
// 1,000 runs, and the charts of one run of 58,000 results.

// BenchmarkBrowserRunsList1000 times the Runs page listing 1,000 runs.
func BenchmarkBrowserRunsList1000(b *testing.B) {
	dir := benchSweep(b)
	ctx, _ := newTab(b)
	u, stop := browserServer(b, dir)
	defer stop()
	timePageLoads(b, ctx, u+"#/runs", "runs", func() {
		if c := eval[string](b, ctx, `document.getElementById("runcount").textContent`); c != "1000 of 1000 runs" {
			b.Fatalf("runs count %q", c)
		}
		if n := eval[int](b, ctx, `document.querySelectorAll("#runtable tbody tr").length`); n == 0 {
			b.Fatal("no rows drawn")
		}
	})
}

// drawnScript runs in every document the benchmark's tab opens. It tells
// the benchmark, through the grayBenchDrawn binding, when the page is
// first drawn with its content: the first frame after the page set its
// ready marker, by the page's clock (ms from the navigation's start). A
// frame callback runs before that frame's style, layout and paint; a task
// it posts runs after them.
const drawnScript = `(() => {
	if (location.protocol === "about:") return;
	const seen = new MutationObserver(() => {
		if (!document.body || !document.body.dataset.ready) return;
		seen.disconnect();
		requestAnimationFrame(() => setTimeout(() => grayBenchDrawn(String(performance.now()))));
	});
	seen.observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready"] });
})()`

// timePageLoads times loads of url, each from a blank page: the timed
// part is what a user waits for, from the navigation's start to the
// page's first frame with its content, told by the page itself (nothing
// polls). Leaving the last page, and check (which looks at what was
// drawn), are not timed, nor counted in the CPU figures. The first load,
// not counted, lets the server read the files and chromium compile the
// page.
func timePageLoads(b *testing.B, ctx context.Context, url, want string, check func()) {
	b.Helper()
	drawn := make(chan float64, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*cdpruntime.EventBindingCalled); ok && ev.Name == "grayBenchDrawn" {
			v, _ := strconv.ParseFloat(ev.Payload, 64)
			select {
			case drawn <- v:
			default: // a page drawn twice: the first one counts
			}
		}
	}); err != nil {
		b.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, cdpruntime.AddBinding, cdpruntime.AddBindingParams{Name: "grayBenchDrawn"}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: drawnScript})
		return err
	})); err != nil {
		b.Fatal(err)
	}
	blank := func() {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		for len(drawn) > 0 {
			<-drawn
		}
	}
	load := func() float64 {
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.Navigate, page.NavigateParams{URL: url})
			return err
		})); err != nil {
			b.Fatal(err)
		}
		select {
		case ms := <-drawn:
			return ms
		case <-ctx.Done():
			b.Fatalf("%s was not drawn: %v", url, ctx.Err())
			return 0
		}
	}
	checked := func() {
		if r := eval[string](b, ctx, `document.body.dataset.ready || ""`); r != want {
			problem := eval[string](b, ctx, `document.getElementById("problem").textContent`)
			b.Fatalf("page drawn as %q, want %q (problem: %q)", r, want, problem)
		}
		check()
	}
	blank()
	load()
	checked()
	var fig pageFigures
	var goCPU, chCPU time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		blank()
		before := browserMetrics(b, ctx)
		ch0, go0 := chromiumCPU(), cpuTime()
		b.StartTimer()
		ms := load()
		b.StopTimer()
		goCPU += cpuTime() - go0
		chCPU += chromiumCPU() - ch0
		n++
		fig.add(b, ctx, ms, before)
		checked()
		b.StartTimer()
	}
	fig.report(b, n, goCPU.Seconds(), chCPU.Seconds())
}

// longRun writes one run of n results with about 25 keys each (what a
// PPO run logs), once per benchmark.
func longRun(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "exp", "long"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "exp", "long", resultFile))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewSource(1))
	keys := []string{"kl", "entropy", "policy_loss", "vf_loss", "total_loss", "cur_lr", "vf_explained_var", "grad_gnorm"}
	var line strings.Builder
	for i := 1; i <= n; i++ {
		line.Reset()
		fmt.Fprintf(&line, `{"training_iteration":%d,"timesteps_total":%d,"episode_reward_mean":%g,"episode_reward_max":%g,"episode_len_mean":%g,"time_total_s":%g,"timestamp":%f,"info":{"learner":{`,
			i, i*200, rng.Float64()*500, rng.Float64()*500, rng.Float64()*200, float64(i)/100, 1795847230+float64(i)/100)
		for k, key := range keys {
			if k > 0 {
				line.WriteByte(',')
			}
			fmt.Fprintf(&line, `"%s":%g`, key, rng.Float64())
		}
		line.WriteString("}},\"done\":false}\n")
		if _, err := f.WriteString(line.String()); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkBrowserChart58000Points times a run of 58,000 results to its
// drawn charts (downsampled by the server).
func BenchmarkBrowserChart58000Points(b *testing.B) {
	dir := longRun(b, 58000)
	ctx, _ := newTab(b)
	u, stop := browserServer(b, dir)
	defer stop()
	timePageLoads(b, ctx, u+"#/chart?run=exp/long", "chart", func() {
		if n := eval[int](b, ctx, `document.querySelectorAll(".chart path.series").length`); n < 14 {
			b.Fatalf("%d charts drawn", n)
		}
	})
}
