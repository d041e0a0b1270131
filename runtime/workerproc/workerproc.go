// Package workerproc starts a driver's worker process and carries its
// output: to a log file per stream, or line by line, each line prefixed
// with the worker's name, to the driver's own output. It knows nothing of
// tasks or the node's lock; runtime/node decides when a worker starts and
// what its death means.
package workerproc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Spec says what to start and where its output goes.
type Spec struct {
	Path string   // the executable
	Args []string // its arguments
	Env  []string // its whole environment
	ID   int      // the worker's number: names its log files and prefixes its lines

	// LogDir, when set, receives worker-<ID>.out and worker-<ID>.err;
	// otherwise each line goes to Output, prefixed with "(worker <ID>) ".
	LogDir string
	Output io.Writer
}

// Run starts the process and waits for it to end; the error says how it
// ended (nil: exit status 0). started is called once the process runs,
// before Run waits for it; when it returns false the process is killed at
// once (its worker was given up while it started). The process dies with
// the driver where the OS allows (Linux: Pdeathsig).
func Run(s Spec, started func(*os.Process) (keep bool)) error {
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	cmd.SysProcAttr = sysProcAttr()
	var closers []io.Closer
	var copiers sync.WaitGroup
	prefix := fmt.Sprintf("(worker %d) ", s.ID)
	for _, stream := range []string{"out", "err"} {
		if s.LogDir != "" {
			// A log that cannot be created leaves that stream discarded:
			// the worker still runs.
			f, err := os.Create(filepath.Join(s.LogDir, fmt.Sprintf("worker-%d.%s", s.ID, stream)))
			if err != nil {
				continue
			}
			closers = append(closers, f)
			if stream == "out" {
				cmd.Stdout = f
			} else {
				cmd.Stderr = f
			}
			continue
		}
		var pipe io.ReadCloser
		var err error
		if stream == "out" {
			pipe, err = cmd.StdoutPipe()
		} else {
			pipe, err = cmd.StderrPipe()
		}
		if err != nil {
			continue
		}
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			prefixLines(s.Output, prefix, pipe)
		}()
	}
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.Path, err) // Start closed the pipes
	}
	if !started(cmd.Process) {
		_ = cmd.Process.Kill()
	}
	copiers.Wait() // the pipes close when the process exits; Wait must come after the reads
	return cmd.Wait()
}

// JoinInts writes v as a comma-separated list (CUDA_VISIBLE_DEVICES).
func JoinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// prefixLines copies r to out line by line, each line prefixed; a last
// line without a newline gets one.
func prefixLines(out io.Writer, prefix string, r io.Reader) {
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	for {
		k, err := r.Read(chunk)
		buf = append(buf, chunk[:k]...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := make([]byte, 0, len(prefix)+i+1)
			line = append(line, prefix...)
			line = append(line, buf[:i+1]...)
			_, _ = out.Write(line)
			buf = buf[i+1:]
		}
		if err != nil {
			if len(buf) > 0 {
				_, _ = out.Write(append([]byte(prefix), append(buf, '\n')...))
			}
			return
		}
	}
}
