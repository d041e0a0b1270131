package worker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// TestDirectListener: where a worker takes direct calls. On the driver's
// machine a Unix socket beside the driver's, and, when the driver runs a
// cluster (task.EnvDirectHost), TCP at that host too, for callers on other
// nodes; a host it cannot listen on leaves the Unix socket alone. On
// another node, TCP. Every address listed takes a caller's connection.
func TestDirectListener(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "node.sock")
	for _, c := range []struct {
		name        string
		socket      string // the worker's connection to the driver
		host, token string
		want        []string // each address's prefix
	}{
		{"the driver's machine", sock, "", "", []string{filepath.Join(dir, "direct-3.sock")}},
		{"the driver's machine of a cluster", sock, "127.0.0.1", "0a0b", []string{filepath.Join(dir, "direct-3.sock"), "tcp:127.0.0.1:"}},
		{"a cluster host it cannot listen on", sock, "192.0.2.1", "0a0b", []string{filepath.Join(dir, "direct-3.sock")}},
		{"another node", "tcp:127.0.0.1:1", "", "0a0b", []string{"tcp:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(task.EnvSocket, c.socket)
			t.Setenv(task.EnvDirectHost, c.host)
			t.Setenv(task.EnvToken, c.token)
			w := &Worker{id: 3, name: "worker 3 (test)"}
			lns, addr, err := w.directListener()
			if err != nil {
				t.Fatal(err)
			}
			for _, ln := range lns {
				t.Cleanup(func() { ln.Close() })
			}
			got := strings.Fields(addr)
			if len(got) != len(c.want) || len(lns) != len(c.want) {
				t.Fatalf("%d listeners at %q, want %d at %q…", len(lns), addr, len(c.want), c.want)
			}
			for i, a := range got {
				if !strings.HasPrefix(a, c.want[i]) {
					t.Fatalf("address %d is %q, want %q…", i, a, c.want[i])
				}
				if strings.HasPrefix(a, "tcp:0.0.0.0:") || strings.HasPrefix(a, "tcp:[::]:") {
					continue // another node's unspecified host: not dialled as is
				}
				accepted := make(chan error, 1)
				go func() { // ends with the listener (Cleanup)
					conn, err := lns[i].Accept()
					if err == nil {
						conn.Close()
					}
					accepted <- err
				}()
				conn, err := dial(a)
				if err != nil {
					t.Fatalf("dialling %q: %v", a, err)
				}
				conn.Close()
				if err := <-accepted; err != nil {
					t.Fatalf("accepting on %q: %v", a, err)
				}
			}
		})
	}
}
