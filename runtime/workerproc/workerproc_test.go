package workerproc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPrefixLines(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"a\n", "> a\n"},
		{"a\nb\n", "> a\n> b\n"},
		{"a\nlast", "> a\n> last\n"}, // a last line without a newline gets one
		{strings.Repeat("x", 5000) + "\n", "> " + strings.Repeat("x", 5000) + "\n"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		prefixLines(&out, "> ", strings.NewReader(tc.in))
		if out.String() != tc.want {
			t.Errorf("prefixLines(%.20q) = %.40q, want %.40q", tc.in, out.String(), tc.want)
		}
	}
}

// lockedBuffer is an io.Writer two copiers may write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func TestRun(t *testing.T) {
	sh, err := os.Stat("/bin/sh")
	if err != nil || sh.IsDir() {
		t.Skip("no /bin/sh")
	}
	script := []string{"-c", "echo out; echo err >&2; exit 3"}

	t.Run("output prefixed, exit reported", func(t *testing.T) {
		var out lockedBuffer
		pid := 0
		err := Run(Spec{Path: "/bin/sh", Args: script, ID: 7, Output: &out}, func(p *os.Process) bool { pid = p.Pid; return true })
		if err == nil || !strings.Contains(err.Error(), "exit status 3") {
			t.Fatalf("Run = %v, want exit status 3", err)
		}
		if pid == 0 {
			t.Fatal("started was not called")
		}
		got := out.b.String()
		if !strings.Contains(got, "(worker 7) out\n") || !strings.Contains(got, "(worker 7) err\n") {
			t.Fatalf("output %q lacks the prefixed lines", got)
		}
	})
	t.Run("log files", func(t *testing.T) {
		dir := t.TempDir()
		_ = Run(Spec{Path: "/bin/sh", Args: script, ID: 2, LogDir: dir}, func(*os.Process) bool { return true })
		for file, want := range map[string]string{"worker-2.out": "out\n", "worker-2.err": "err\n"} {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || string(b) != want {
				t.Errorf("%s = %q, %v; want %q", file, b, err, want)
			}
		}
	})
	t.Run("given up while starting", func(t *testing.T) {
		err := Run(Spec{Path: "/bin/sh", Args: []string{"-c", "exec sleep 60"}, Output: &lockedBuffer{}}, func(*os.Process) bool { return false })
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("Run = %v, want the process killed", err)
		}
	})
	t.Run("missing executable", func(t *testing.T) {
		err := Run(Spec{Path: filepath.Join(t.TempDir(), "none"), Output: &lockedBuffer{}}, func(*os.Process) bool {
			t.Error("started called for a process that never ran")
			return true
		})
		if err == nil || !strings.Contains(err.Error(), "starting ") {
			t.Fatalf("Run = %v, want a start error naming the executable", err)
		}
	})
}
