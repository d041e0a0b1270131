package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The index's look at the files runs in the server's watcher, off the
// requests' path. These tests check that a request between two looks
// still never serves a run deleted or swapped for a link since the last
// look, and that the next look drops it from the list and tells pages.

// httpGet asks a running dashboard for path and returns the status, the
// body and the response's headers.
func httpGet(t *testing.T, srv *Server, path string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(srv.URL(), "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultTransport.RoundTrip(req) // no transparent gzip: the test sees what was sent
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b), res.Header
}

func TestWatchedIndexRefusesWhatLeftBetweenLooks(t *testing.T) {
	root := t.TempDir()
	logdir := filepath.Join(root, "logs")
	secret := writeRun(t, root, "secret/run", resultLine(1, 666))
	gone := writeRun(t, logdir, "exp/gone", resultLine(1, 10))
	fileRun := writeRun(t, logdir, "exp/file", resultLine(1, 1))
	dirRun := writeRun(t, logdir, "exp/dir", resultLine(1, 2))
	// An hour between looks: after the first, every answer below comes
	// from what that look found, and the per-run checks alone refuse.
	srv := serve(t, Options{LogDir: logdir, Interval: time.Hour})
	if _, body, _ := httpGet(t, srv, "/api/runs"); !strings.Contains(body, "exp/gone") || !strings.Contains(body, "exp/dir") {
		t.Fatalf("runs before the changes: %s", body)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	swapInLinks(t, secret, fileRun, dirRun)
	for _, id := range []string{"exp/gone", "exp/file", "exp/dir"} {
		for _, u := range []string{"/api/run?id=" + id, "/api/csv?run=" + id, "/api/series?run=" + id, "/api/logs?run=" + id} {
			if code, body, _ := httpGet(t, srv, u); code == http.StatusOK || strings.Contains(body, "666") {
				t.Errorf("GET %s between two looks: %d %s", u, code, body)
			}
		}
	}
	if _, body, _ := httpGet(t, srv, "/api/runs"); strings.Contains(body, "666") {
		t.Errorf("runs list shows a linked file's values: %s", body)
	}
}

func TestWatchedIndexDropsADeletedRunAndTellsPages(t *testing.T) {
	logdir := t.TempDir()
	gone := writeRun(t, logdir, "exp/gone", resultLine(1, 10))
	writeRun(t, logdir, "exp/kept", resultLine(1, 5))
	srv := serve(t, Options{LogDir: logdir, Interval: 20 * time.Millisecond})
	code, body, hdr := httpGet(t, srv, "/api/runs")
	if code != http.StatusOK || !strings.Contains(body, "exp/gone") {
		t.Fatalf("runs before deletion: %d %s", code, body)
	}
	etag := hdr.Get("ETag")
	var before struct{ Version uint64 }
	decodeString(t, body, &before)

	// Pages learn of the change from /api/events: wait for a version
	// later than the one listed.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for {
		if !sc.Scan() {
			t.Fatalf("events ended before a version after %d: %v", before.Version, sc.Err())
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if n, _ := strconv.ParseUint(v, 10, 64); n > before.Version {
				break
			}
		}
	}
	code, body, hdr = httpGet(t, srv, "/api/runs", "If-None-Match", etag)
	if code != http.StatusOK || strings.Contains(body, "exp/gone") || !strings.Contains(body, "exp/kept") {
		t.Errorf("runs after the deletion was seen (asked with the old ETag): %d %s", code, body)
	}
	if hdr.Get("ETag") == etag {
		t.Errorf("the list changed but its ETag %s did not", etag)
	}
}

// TestRunsListIsEncodedOncePerVersion checks the answer pages reload:
// compressed for a browser, 304 while nothing changed, and the same runs
// either way.
func TestRunsListIsEncodedOncePerVersion(t *testing.T) {
	logdir := t.TempDir()
	for i := 0; i < 50; i++ {
		writeRun(t, logdir, fmt.Sprintf("exp/run_%02d", i), resultLine(1, float64(i)))
	}
	srv := serve(t, Options{LogDir: logdir, Interval: time.Hour})
	code, plain, hdr := httpGet(t, srv, "/api/runs")
	if code != http.StatusOK || hdr.Get("Content-Encoding") != "" || !strings.Contains(plain, "exp/run_49") {
		t.Fatalf("plain answer: %d %q %.200s", code, hdr.Get("Content-Encoding"), plain)
	}
	etag := hdr.Get("ETag")
	if etag == "" || hdr.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: a page could not ask whether its copy is current", etag, hdr.Get("Cache-Control"))
	}
	code, zipped, hdr := httpGet(t, srv, "/api/runs", "Accept-Encoding", "gzip, deflate")
	if code != http.StatusOK || hdr.Get("Content-Encoding") != "gzip" || len(zipped) >= len(plain)/2 {
		t.Errorf("gzip answer: %d %q, %d bytes against %d plain", code, hdr.Get("Content-Encoding"), len(zipped), len(plain))
	}
	if code, body, _ := httpGet(t, srv, "/api/runs", "If-None-Match", etag); code != http.StatusNotModified || body != "" {
		t.Errorf("asked again with its ETag: %d %q, want 304 and no body", code, body)
	}
	// Another server (a restart) numbers its versions afresh: its ETags
	// must not match the first one's.
	other := serve(t, Options{LogDir: logdir, Interval: time.Hour})
	if code, _, _ := httpGet(t, other, "/api/runs", "If-None-Match", etag); code != http.StatusOK {
		t.Errorf("a restarted server answered the old server's ETag with %d", code)
	}
	// A filtered list is the page's filter, answered afresh.
	if code, body, _ := httpGet(t, srv, "/api/runs?filter=run_0[12]$"); code != http.StatusOK || strings.Count(body, `"id"`) != 2 {
		t.Errorf("filtered list: %d %s", code, body)
	}
}

func decodeString(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %.300s", err, s)
	}
}
