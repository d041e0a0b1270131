package dashboard

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runWithLogs writes a run whose logs folder holds two workers' output, a
// link out of the log dir and a subfolder.
func runWithLogs(t *testing.T) (logdir string) {
	t.Helper()
	root := t.TempDir()
	logdir = filepath.Join(root, "logs")
	dir := writeRun(t, logdir, "exp/run", resultLine(1, 1))
	logs := filepath.Join(dir, logsDir)
	os.MkdirAll(filepath.Join(logs, "sub"), 0o755)
	writeFile(t, filepath.Join(logs, "worker-1.out"), "starting\n<b>step 1</b> on worker 1\n")
	writeFile(t, filepath.Join(logs, "worker-2.err"), strings.Repeat("x", 300<<10)+"\nthe end\n")
	writeFile(t, filepath.Join(root, "secret.txt"), "hunter2")
	os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(logs, "link.out"))
	return logdir
}

func TestRunLogsListAndTail(t *testing.T) {
	srv := testServer(t, Options{LogDir: runWithLogs(t)})
	h := srv.Handler()
	type list struct {
		Files []logFile `json:"files"`
	}
	l := decode[list](t, get(t, h, "/api/logs?run=exp/run"))
	var names []string
	for _, f := range l.Files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "worker-1.out,worker-2.err" {
		t.Errorf("log files %v, want the two workers' files only (no link, no folder)", names)
	}
	rec := get(t, h, "/api/log?run=exp/run&file=worker-2.err")
	if rec.Code != http.StatusOK || rec.Body.Len() != defaultLogTail || !strings.HasSuffix(rec.Body.String(), "the end\n") || rec.Header().Get("X-Log-Offset") == "0" {
		t.Errorf("tail of a 300 KiB log: %d, %d bytes, offset %s", rec.Code, rec.Body.Len(), rec.Header().Get("X-Log-Offset"))
	}
	for _, f := range []string{"link.out", "../result.json", "sub", "", "../../secret.txt"} {
		if rec := get(t, h, "/api/log?run=exp/run&file="+f); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "hunter2") {
			t.Errorf("file=%q: %d %s", f, rec.Code, rec.Body)
		}
	}
}

func TestBrowserRunLogsTab(t *testing.T) {
	browserCtx(t)
	srv := serve(t, Options{LogDir: runWithLogs(t)})
	ctx, _ := newTab(t)
	open(t, ctx, srv.URL()+"#/chart?run=exp/run", "chart")
	eval[bool](t, ctx, `(() => { document.getElementById("logslink").click(); return true })()`)
	waitJS(t, ctx, `document.body.dataset.ready === "logs" && document.getElementById("logtext").textContent.includes("on worker 1")`)
	if got := eval[string](t, ctx, `document.getElementById("logtext").textContent`); !strings.Contains(got, "<b>step 1</b>") {
		t.Errorf("log shown as %q, want its text with the markup as text", got)
	}
	eval[bool](t, ctx, `(() => { const s = document.getElementById("logfile"); s.value = "worker-2.err"; s.dispatchEvent(new Event("change")); return true })()`)
	waitJS(t, ctx, `document.getElementById("logtext").textContent.endsWith("the end\n") && document.getElementById("loginfo").textContent.startsWith("last")`)
	if !eval[bool](t, ctx, onlyOwnScripts) {
		t.Error("the logs page runs markup from a log")
	}
}
