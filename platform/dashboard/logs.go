package dashboard

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// logsDir is the folder of a run where its worker processes write their
// standard output and error (runner.LogsDir; not imported, to keep the
// dashboard free of the training packages).
const logsDir = "logs"

// Limits of the log viewer: the files listed, and the bytes of one
// answer (the end of the file; the page can ask for more).
const (
	maxLogFiles    = 500
	defaultLogTail = 256 << 10
	maxLogTail     = 4 << 20
)

// logFile is one file of a run's logs folder.
type logFile struct {
	Name  string    `json:"name"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
}

// runLogs lists the regular files of the run's logs folder that resolve
// inside the log dir, by name.
func (s *Server) runLogs(r *run) []logFile {
	return listLogFiles(s.root, filepath.Join(r.dir, logsDir))
}

// listLogFiles lists the regular files of dir, a folder inside root, by
// name; links are left out.
func listLogFiles(root, dir string) []logFile {
	if !dirInside(root, dir) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []logFile
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || len(out) == maxLogFiles {
			continue
		}
		if info, err := e.Info(); err == nil {
			out = append(out, logFile{Name: e.Name(), Size: info.Size(), MTime: info.ModTime()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// apiLogs answers /api/logs?run=ID: the files of the run's logs folder.
func (s *Server) apiLogs(w http.ResponseWriter, r *http.Request) {
	unlock := s.current()
	defer unlock()
	run := s.lookupRun(w, r.URL.Query().Get("run"))
	if run == nil {
		return
	}
	files := s.runLogs(run)
	if files == nil {
		files = []logFile{}
	}
	writeJSON(w, map[string]any{"run": run.id, "files": files, "limit": maxLogFiles})
}

// apiLog answers /api/log?run=ID&file=NAME&tail=BYTES: the last BYTES of
// one log file (default 256 KiB, at most 4 MiB) as text. Header
// X-Log-Size has the file's size and X-Log-Offset where the text starts.
func (s *Server) apiLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if _, ok := logTail(w, r); !ok {
		return
	}
	unlock := s.current()
	run := s.lookupRun(w, q.Get("run"))
	if run == nil {
		unlock()
		return
	}
	// Only a name the listing has: never a path joined from the request.
	var path string
	for _, f := range s.runLogs(run) {
		if f.Name == q.Get("file") {
			path = filepath.Join(run.dir, logsDir, f.Name)
		}
	}
	unlock()
	writeLogTail(w, r, s.root, path, "the run")
}

// logTail reads ?tail= (default defaultLogTail, at most maxLogTail),
// answering 400 when it is not a count of bytes.
func logTail(w http.ResponseWriter, r *http.Request) (int64, bool) {
	tail := int64(defaultLogTail)
	if t := r.URL.Query().Get("tail"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n <= 0 {
			badRequest(w, "tail=%q is not a positive count of bytes", t)
			return 0, false
		}
		tail = min(n, maxLogTail)
	}
	return tail, true
}

// writeLogTail answers the end of the log file at path ("" when the
// listing lacks the name asked for) as text, refusing a file that is a
// link or no longer inside root. whose names the owner in errors.
func writeLogTail(w http.ResponseWriter, r *http.Request, root, path, whose string) {
	tail, ok := logTail(w, r)
	if !ok {
		return
	}
	if path == "" || !fileInside(root, path) {
		http.Error(w, fmt.Sprintf("dashboard: %s has no log file %q", whose, r.URL.Query().Get("file")), http.StatusNotFound)
		return
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		http.Error(w, "dashboard: opening the log: "+err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "dashboard: reading the log: "+err.Error(), http.StatusInternalServerError)
		return
	}
	off := max(st.Size()-tail, 0)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Log-Size", strconv.FormatInt(st.Size(), 10))
	h.Set("X-Log-Offset", strconv.FormatInt(off, 10))
	_, _ = io.Copy(w, io.NewSectionReader(f, off, st.Size()-off))
}
