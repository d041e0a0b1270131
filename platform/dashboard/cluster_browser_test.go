package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
)

var clusterSquare = gray.Func1("dashboard_test.cluster.square", func(ctx context.Context, x int) (int, error) { return x * x, nil })

// TestBrowserClusterViewListsAJobsTasks runs a real job on a real
// cluster (a head node, its Redis, this test binary as the driver) and
// shows its tasks on the cluster page, through the filter box.
func TestBrowserClusterViewListsAJobsTasks(t *testing.T) {
	browserCtx(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token(), ObjectStoreMemory: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gray.Shutdown() })
	refs := make([]gray.Ref[int], 4)
	for i := range refs {
		refs[i] = clusterSquare.Remote(i)
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{LogDir: t.TempDir(), Cluster: c.Dial("")})
	tab, lg := newTab(t)
	defer lg.check(t)
	open(t, tab, srv.URL()+"#/cluster", "cluster")
	waitJS(t, tab, `!document.getElementById("nav-cluster").hidden`)
	if err := chromedp.Do(tab, chromedp.SetValue("#cl-filter", "name=dashboard_test.cluster.square state=finished")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click("#cl-apply")); err != nil {
		t.Fatal(err)
	}
	// The recorder writes off the task path: the rows come within a poll.
	waitJS(t, tab, `document.getElementById("cl-rows").dataset.count === "4"`)
	text := eval[string](t, tab, `document.getElementById("cl-rows").textContent`)
	if strings.Count(text, "dashboard_test.cluster.square") != 4 || strings.Count(text, "finished") != 4 {
		t.Fatalf("the cluster page's rows: %q", text)
	}
	// A bad filter is refused, naming the keys to use (over HTTP: the
	// page would log the 400 as a console error).
	rec := get(t, srv.Handler(), "/api/cluster/tasks?filter=colour%3Dred")
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "task_id") {
		t.Fatalf("a bad filter: %d %q", rec.Code, rec.Body.String())
	}
	// The nodes kind draws each node's CPU and memory of the last hour,
	// from the samples its heartbeats carry (one every 5 s, after a
	// baseline): a chart with samples for the head and for the other node.
	if err := chromedp.Do(tab, chromedp.Click(`#cl-kinds button[data-kind="nodes"]`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `[...document.querySelectorAll("#cl-history svg.hist")].filter(g => Number(g.dataset.samples) >= 1 && g.querySelector("path.cpu") && g.querySelector("path.mem")).length === 2`)
	if n := eval[int](t, tab, `document.querySelectorAll("#cl-rows tbody tr").length`); n != 2 {
		t.Errorf("nodes table: %d rows, want 2", n)
	}
	screenshot(t, tab, "cluster-nodes-history")
	// The jobs list counts what ran.
	// Another kind starts unfiltered (its keys differ).
	if err := chromedp.Do(tab, chromedp.Click(`#cl-kinds button[data-kind="jobs"]`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, fmt.Sprintf(`document.getElementById("cl-rows").dataset.kind === "jobs" && document.getElementById("cl-rows").textContent.includes(%q)`, "running"))
	screenshot(t, tab, "cluster-jobs")
}
