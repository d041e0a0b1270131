package dashboard

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Issue 25's goals, timed in chromium from navigation to the drawn page
// against a server that has read the files already: the runs list of
// 1,000 runs, and the charts of one run of 58,000 results.

// BenchmarkBrowserRunsList1000 times the Runs page listing 1,000 runs.
func BenchmarkBrowserRunsList1000(b *testing.B) {
	dir := benchSweep(b)
	ctx, _ := newTab(b)
	u, stop := browserServer(b, dir)
	defer stop()
	load := func() {
		reopen(b, ctx, u+"#/runs", "runs")
		if c := eval[string](b, ctx, `document.getElementById("runcount").textContent`); c != "1000 of 1000 runs" {
			b.Fatalf("runs count %q", c)
		}
	}
	load() // the server's read, and chromium's first compile of the page
	reportBrowserCPU(b, ctx, load)
}

// reopen loads the page afresh (by way of a blank page, so nothing of the
// last load is reused but the browser's caches) and waits until it drew.
func reopen(b *testing.B, ctx context.Context, url, page string) {
	b.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		b.Fatal(err)
	}
	open(b, ctx, url, page)
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
	load := func() {
		reopen(b, ctx, u+"#/chart?run=exp/long", "chart")
		if n := eval[int](b, ctx, `document.querySelectorAll(".chart path.series").length`); n < 14 {
			b.Fatalf("%d charts drawn", n)
		}
	}
	load()
	reportBrowserCPU(b, ctx, load)
}
