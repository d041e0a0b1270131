package clustertest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/internal/owned"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
)

// The token stays off command lines: the join command `gray start --head`
// prints names the head's 0600 token file, not the token; nodes join with
// --token-file or GRAY_TOKEN; --token still works but warns; a token file
// other users may read is refused.
func TestTokenStaysOffCommandLines(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	tok := c.Token()
	if strings.Contains(c.HeadOutput, tok) {
		t.Errorf("gray start --head printed the token:\n%s", c.HeadOutput)
	}
	fi, err := os.Stat(c.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %s has mode %v, want 0600", c.TokenFile(), fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(c.TokenFile()); strings.TrimSpace(string(b)) != tok {
		t.Errorf("token file holds %q, want the cluster token", b)
	}
	// A copy readable by others is refused, saying how to fix it.
	loose := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(loose, []byte(tok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.Gray("status", "--address", c.Address(), "--token-file", loose)
	if err == nil || !strings.Contains(out, "chmod 600") {
		t.Errorf("status with a 0644 token file: %v\n%s", err, out)
	}
	// --token works, with a warning naming the safe forms.
	out, err = c.Gray("status", "--address", c.Address(), "--token", tok)
	if err != nil || !strings.Contains(out, "warning: --token") || !strings.Contains(out, "--token-file") {
		t.Errorf("status --token: %v\n%s", err, out)
	}
	// A 0600 copy serves, without a warning.
	if err := os.Chmod(loose, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = c.Gray("status", "--address", c.Address(), "--token-file", loose)
	if err != nil || strings.Contains(out, "warning") {
		t.Errorf("status --token-file: %v\n%s", err, out)
	}
	// The node daemons' command lines hold no token.
	for i := range c.Size() {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(c.NodePID(i)) + "/cmdline")
		if strings.Contains(string(cmdline), tok) {
			t.Errorf("node %d's command line holds the token", i)
		}
	}
}

// `gray stop` counts the nodes that ran, also after a crashed node's temp
// dir was reused by a later `gray start` (each start there left an index
// entry, and the stale ones were counted on every later stop).
func TestStopCountsAReusedTempDirOnce(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	c.KillNode(1)
	out, err := c.Gray("start", "--address", c.Address(), "--token-file", c.TokenFile(), "--temp-dir", c.Node(1).TempDir,
		"--num-cpus", "1", "--node-ip-address", c.Node(1).IP)
	if err != nil {
		t.Fatalf("gray start in the crashed node's temp dir: %v\n%s", err, out)
	}
	again, err := session.Read(c.Node(1).TempDir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-again.PID(session.NodePIDFile), syscall.SIGKILL) }()
	if out, err := c.Gray("stop"); err != nil || !strings.Contains(out, "Stopped 2 nodes.") {
		t.Errorf("gray stop (the head and one node ran): %v\n%s", err, out)
	}
	if out, err := c.Gray("stop"); err != nil || !strings.Contains(out, "Stopped 0 nodes.") {
		t.Errorf("gray stop again: %v\n%s", err, out)
	}
}

// An address other machines cannot dial is refused at once, naming the fix.
func TestStartRefusesWildcardAddress(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	for _, ip := range []string{"0.0.0.0", "::"} {
		out, err := c.Gray("start", "--head", "--port", "0", "--node-ip-address", ip, "--temp-dir", filepath.Join(t.TempDir(), "h"))
		if err == nil || !strings.Contains(out, "every interface") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("--node-ip-address %s: %v\n%s", ip, err, out)
		}
	}
}

// A dead node leaves `gray status` once listed dead for --keep-ended, and
// so does an ended job.
func TestDeadNodesAndEndedJobsExpire(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, KeepEnded: time.Second})
	victim := c.Node(1).ID
	r := c.Dial("ended-job")
	ctx := context.Background()
	if err := r.RegisterJob(ctx, control.JobInfo{ID: "ended-job", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := r.EndJob(ctx, "ended-job"); err != nil {
		t.Fatal(err)
	}
	c.KillNode(1)
	c.WaitStatus(20*time.Second, "the killed node listed dead", func(st clustertest.Status) bool {
		n, ok := st.Node(victim)
		return ok && !n.Alive
	})
	c.WaitStatus(20*time.Second, "the dead node and the ended job no longer listed", func(st clustertest.Status) bool {
		_, listed := st.Node(victim)
		return !listed && len(st.Jobs) == 0 && st.Alive == 1
	})
}

// `gray start` sweeps what killed processes of this machine left in the
// temporary directory (a driver's node.sock folder, a trial's folder) and
// leaves the folders of live processes.
func TestStartSweepsLeftoversOfDeadProcesses(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	// A real process, killed, owns the leftovers.
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := owned.StartTime(victim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = victim.Process.Kill()
	_ = victim.Wait()
	owner := strconv.Itoa(victim.Process.Pid) + "." + st + "-test"
	var left []string
	for _, p := range []string{owned.SocketDirPrefix, owned.TrialDirPrefix} {
		d := filepath.Join(os.TempDir(), p+owner)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.WriteFile(filepath.Join(d, "node.sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		left = append(left, d)
	}
	live, err := owned.MkdirTemp("", owned.SocketDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(live) })
	out, err := c.Gray("start", "--address", c.Address(), "--token-file", c.TokenFile(), "--num-cpus", "1",
		"--temp-dir", filepath.Join(t.TempDir(), "n"), "--node-ip-address", "127.0.0.2")
	if err != nil {
		t.Fatalf("gray start: %v\n%s", err, out)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s (its owner is dead) was not swept", d)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the folder of a live process was swept: %v", err)
	}
}
