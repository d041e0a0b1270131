package dashboard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's chromium through the DevTools protocol.
// Without chromium they skip, except in CI (where `make deps` installs it)
// where they fail.
const chromiumPath = "/usr/bin/chromium"

var browserOnce struct {
	sync.Once
	ctx    context.Context
	cancel func()
	err    error
	dir    string
}

// browserCtx returns the context of the test binary's one headless
// browser, starting it on first use.
func browserCtx(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests skipped with -short")
	}
	if raceEnabled {
		t.Skip("browser tests skipped under -race (make test runs them in its second pass)")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is missing at %s; `make deps` installs it (APT_PKGS)", chromiumPath)
		}
		t.Skipf("chromium is not installed (%s): apt-get install -y chromium to run the browser tests", chromiumPath)
	}
	b := &browserOnce
	b.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "gray-dashboard-chromium-")
		if b.err != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromiumPath),
			chromedp.Flag("headless", true),
			chromedp.Flag("no-sandbox", true),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(b.dir),
			chromedp.WindowSize(1280, 860),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil { // starts the browser
			b.err = fmt.Errorf("starting chromium: %w", err)
		}
		b.ctx = bctx
		b.cancel = func() { bcancel(); acancel(); os.RemoveAll(b.dir) }
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.ctx
}

// pageLog collects what a page must not do: throw, log errors, open
// dialogs (an alert() would mean injected markup ran).
type pageLog struct {
	mu      sync.Mutex
	errs    []string
	dialogs []string
}

func (p *pageLog) add(list *[]string, s string) {
	p.mu.Lock()
	*list = append(*list, s)
	p.mu.Unlock()
}

// check fails t for every error or dialog the page produced.
func (p *pageLog) check(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errs {
		t.Errorf("page error: %s", e)
	}
	for _, d := range p.dialogs {
		t.Errorf("page opened a dialog (injected script ran?): %s", d)
	}
}

// newTab opens a tab in the shared browser, watching its errors; the tab
// closes when the test ends, after its log is checked.
func newTab(t testing.TB) (context.Context, *pageLog) {
	t.Helper()
	bctx := browserCtx(t)
	ctx, cancel := chromedp.NewContext(bctx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	lg := &pageLog{}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			lg.add(&lg.errs, fmt.Sprintf("exception: %s (%s:%d)", msg, d.URL, d.LineNumber))
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError {
				lg.add(&lg.errs, "console.error")
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				lg.add(&lg.errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			lg.add(&lg.dialogs, ev.Message)
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
					return err
				}))
			}()
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		lg.check(t)
		cancelT()
		cancel()
	})
	return ctx, lg
}

// open navigates to the dashboard's page and waits until it has drawn.
func open(t testing.TB, ctx context.Context, url, page string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigating to %s: %v", url, err)
	}
	waitJS(t, ctx, fmt.Sprintf(`document.body.dataset.ready === %q`, page))
}

// waitJS waits until the expression is true in the page.
func waitJS(t testing.TB, ctx context.Context, expr string) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second)))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
		time.Sleep(100 * time.Millisecond) // the page navigated under the poll: poll the new one
	}
	if err != nil {
		problem, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("problem").textContent`))
		t.Fatalf("waiting for %s: %v (page problem: %q)", expr, err, problem)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot saves the tab's viewport as a test artifact: in
// $GRAY_TEST_ARTIFACTS when set, else in the temporary folder.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	dir := os.Getenv("GRAY_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "gray-dashboard-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("screenshot dir: %v", err)
		return
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// serve starts a dashboard on a free port for the test's life.
func serve(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Port = -1
	if opts.Interval == 0 {
		opts.Interval = 150 * time.Millisecond
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

// fixture is a log dir written by the real train binary.
type fixture struct {
	logdir string
	train  string // the train binary
	run    string // ID of a 3-iteration PPO run
	sweep  string // ID of a 4-trial ASHA sweep
}

var fixtureOnce struct {
	sync.Once
	f   *fixture
	err error
	dir string
}

const sweepYAML = `name: tiny-sweep
env: CartPole-v1
alg: PPO
stop: {training_iteration: 6}
checkpoint_at_end: true
metric: episode_reward_mean
mode: max
seed: 1
scheduler: {type: asha, time_attr: training_iteration, max_t: 6, grace_period: 1, reduction_factor: 2}
config:
  lr: {grid_search: [0.00001, 0.001, 0.003, 0.01]}
  train_batch_size: 256
  sgd_minibatch_size: 64
  num_workers: 0
`

// trainFixture builds cmd/train and writes a run and a sweep with it,
// once per test binary.
func trainFixture(t *testing.T) *fixture {
	t.Helper()
	browserCtx(t) // skip early when there is no browser
	fo := &fixtureOnce
	fo.Do(func() {
		fo.f, fo.err = makeFixture()
	})
	if fo.err != nil {
		t.Fatal(fo.err)
	}
	return fo.f
}

func makeFixture() (*fixture, error) {
	dir, err := os.MkdirTemp("", "gray-dashboard-fixture-")
	if err != nil {
		return nil, err
	}
	fixtureOnce.dir = dir
	f := &fixture{logdir: filepath.Join(dir, "results"), train: filepath.Join(dir, "train")}
	if out, err := exec.Command("go", "build", "-o", f.train, "github.com/gray-ml/gray/cmd/train").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building cmd/train: %v\n%s", err, out)
	}
	if out, err := exec.Command(f.train, "--env", "CartPole-v1", "--alg", "PPO", "--seed", "1", "--num-cpus", "1",
		"--stop", `{"training_iteration": 3}`, "--config", `{"train_batch_size": 256, "sgd_minibatch_size": 64, "num_workers": 0}`,
		"--local-dir", f.logdir, "--name", "runs").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("train: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(f.logdir, "runs", "PPO_CartPole-v1_*"))
	if len(runs) != 1 {
		return nil, fmt.Errorf("train wrote %d run folders, want 1", len(runs))
	}
	f.run = "runs/" + filepath.Base(runs[0])
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte(sweepYAML), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command(f.train, "-f", file, "--local-dir", f.logdir, "--num-cpus", "2").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("train sweep: %v\n%s", err, out)
	}
	f.sweep = "tiny-sweep"
	return f, nil
}
