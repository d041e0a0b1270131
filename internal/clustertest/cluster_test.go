package clustertest_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
)

func allAlive(n int) func(clustertest.Status) bool {
	return func(st clustertest.Status) bool { return st.Alive == n && st.Dead == 0 }
}

func TestClusterStartsAndReportsItsNodes(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2, CPUsPerNode: 2, GPUsPerNode: 1, Resources: map[string]float64{"Custom": 1}})
	st, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Alive != 3 || st.Dead != 0 || len(st.Nodes) != 3 {
		t.Fatalf("status %+v, want 3 alive nodes", st)
	}
	if st.Total.CPU != 6 || st.Total.GPU != 3 || st.Total.Custom["Custom"] != 3 {
		t.Errorf("total resources %v, want CPU=6 GPU=3 Custom=3", st.Total)
	}
	ips := map[string]bool{}
	heads := 0
	for i := range c.Size() {
		n, ok := st.Node(c.Node(i).ID)
		if !ok {
			t.Fatalf("node %d (%s) is not in the status", i, c.Node(i).ID)
		}
		ips[n.IP] = true
		if n.Head {
			heads++
		}
		if n.Resources.CPU != 2 {
			t.Errorf("node %d has CPU=%g, want 2", i, n.Resources.CPU)
		}
	}
	if len(ips) != 3 || heads != 1 {
		t.Errorf("node IPs %v and %d heads, want 3 loopback addresses and one head", ips, heads)
	}
	if out, err := c.Gray("status"); err != nil || !strings.Contains(out, "3 nodes alive, 0 dead") || !strings.Contains(out, "(head)") {
		t.Errorf("gray status printed (%v):\n%s", err, out)
	}
	if !strings.HasSuffix(c.JoinCommand, "--token-file "+c.TokenFile()) || !strings.Contains(c.JoinCommand, c.Address()) {
		t.Errorf("join command %q does not name the address and the token file", c.JoinCommand)
	}
}

// TestSessionFilesAreOwnerOnly: the token is readable by its owner only,
// and Redis listens on the node's address only.
func TestSessionFilesAreOwnerOnly(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	for i := range c.Size() {
		dir := c.Node(i).TempDir
		files := []string{filepath.Join(dir, session.FileName), filepath.Join(dir, session.NodePIDFile)}
		if i == 0 {
			files = append(files, filepath.Join(dir, "redis", "redis.conf"))
		}
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
			}
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", dir, fi.Mode().Perm(), err)
		}
	}
	conf, err := os.ReadFile(filepath.Join(c.Node(0).TempDir, "redis", "redis.conf"))
	if err != nil || !strings.Contains(string(conf), "bind 127.0.0.1\n") {
		t.Errorf("redis.conf does not bind to the head's address only: %v\n%s", err, conf)
	}
}

func TestRedisRefusesConnectionsWithoutTheToken(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	_, err := control.DialRedis(context.Background(), control.RedisConfig{Addr: c.Address()}, "")
	if !errors.Is(err, control.ErrRedisAuth) {
		t.Errorf("a client without the token: err = %v, want ErrRedisAuth", err)
	}
	// A raw connection gets nothing either.
	conn, err := net.DialTimeout("tcp", c.Address(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("*2\r\n$4\r\nKEYS\r\n$1\r\n*\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "-NOAUTH") {
		t.Errorf("KEYS without the password answered %q, %v; want -NOAUTH", line, err)
	}
	// A node with a wrong token cannot join.
	out, err := c.Gray("start", "--address", c.Address(), "--token", strings.Repeat("ab", 32), "--temp-dir", t.TempDir())
	if err == nil || !strings.Contains(out, "token") {
		t.Errorf("joining with a wrong token: %v\n%s", err, out)
	}
}

// TestKilledNodeIsDeclaredDead kills a node with SIGKILL and times how
// long until `gray status` reports it dead (the figure in
// benchmarks/results/runtime.md, "The cluster's control plane").
func TestKilledNodeIsDeclaredDead(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2})
	c.WaitStatus(20*time.Second, "3 alive nodes", allAlive(3))
	victim := c.Node(2).ID
	killed := time.Now()
	c.KillNode(2)
	st := c.WaitStatus(20*time.Second, "the killed node dead", func(st clustertest.Status) bool {
		n, _ := st.Node(victim)
		return !n.Alive
	})
	n, _ := st.Node(victim)
	t.Logf("kill -9 of a node: `gray status` shows it dead %v later (%s)", time.Since(killed).Round(time.Millisecond), n.Death)
	if st.Alive != 2 || n.Death == "" {
		t.Errorf("status %+v: want the 2 other nodes alive and a reason for the death", st)
	}
}

// TestRedisRestartIsSurvived kills redis-server; the head starts it again
// on its append-only file, and the nodes carry on heartbeating.
func TestRedisRestartIsSurvived(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2})
	c.WaitStatus(20*time.Second, "3 alive nodes", allAlive(3))
	killed := time.Now()
	c.RestartRedis()
	answering := time.Since(killed)
	c.WaitStatus(20*time.Second, "every node heartbeating after the restart", func(st clustertest.Status) bool {
		if st.Alive != 3 || st.Dead != 0 {
			return false
		}
		for _, n := range st.Nodes {
			if !n.Heartbeat.After(killed.Add(answering)) {
				return false
			}
		}
		return true
	})
	t.Logf("redis-server killed: answering again after %v, all 3 nodes heartbeating after %v",
		answering.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

// TestStopAfterCrashesLeavesNothing: even with the head daemon killed
// (its redis-server orphaned) and a node killed, `gray stop` ends every
// process (Start's cleanup checks).
func TestStopAfterCrashesLeavesNothing(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	c.KillNode(0)
	c.KillNode(1)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAddressAuto(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	// Status finds the cluster through the session index without flags,
	// as a driver with Address "auto" does.
	st, err := c.Status()
	if err != nil || st.Address != c.Address() {
		t.Fatalf("status = %+v, %v; want the cluster at %s", st, err, c.Address())
	}
	// So does a node started on the head's machine without --token.
	out, err := c.Gray("start", "--address", c.Address(), "--temp-dir", filepath.Join(t.TempDir(), "n"), "--num-cpus", "1")
	if err != nil {
		t.Fatalf("joining without --token on the head's machine: %v\n%s", err, out)
	}
	c.WaitStatus(20*time.Second, "2 alive nodes", allAlive(2))
}

func TestHeadWithoutRedisNamesThePackage(t *testing.T) {
	bin := clustertest.BuildGray(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "start", "--head", "--port", "0", "--temp-dir", filepath.Join(t.TempDir(), "head"))
	cmd.Env = []string{"PATH=" + t.TempDir(), session.EnvIndexDir + "=" + filepath.Join(t.TempDir(), "index")}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "apt-get install redis-server") {
		t.Fatalf("gray start --head without redis-server: %v\n%s", err, out)
	}
}

// TestHeadRestartCarriesOn: the head daemon dies; `gray start --head` in
// its temp dir takes the cluster over (same address and token), the nodes
// carry on, and the new monitor declares deaths.
func TestHeadRestartCarriesOn(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 2})
	addr, token := c.Address(), c.Token()
	c.KillNode(0)
	killed := time.Now()
	c.RestartHead()
	if c.Address() != addr || c.Token() != token {
		t.Fatalf("the new head serves %s, want the cluster's %s and its token", c.Address(), addr)
	}
	c.WaitStatus(20*time.Second, "3 nodes alive after the head's restart", func(st clustertest.Status) bool {
		h, _ := st.Node(c.Node(0).ID)
		return st.Alive == 3 && h.Heartbeat.After(killed)
	})
	c.KillNode(2)
	victim := c.Node(2).ID
	c.WaitStatus(20*time.Second, "the new monitor to declare the killed node dead", func(st clustertest.Status) bool {
		n, _ := st.Node(victim)
		return !n.Alive && st.Alive == 2
	})
}

// TestNodesStopWithTheirOwner: a head whose GRAY_OWNER_PID process ends
// stops by itself, with its redis-server.
func TestNodesStopWithTheirOwner(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	bin := clustertest.BuildGray(t)
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	dir := filepath.Join(t.TempDir(), "head")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "start", "--head", "--port", "0", "--temp-dir", dir)
	cmd.Env = append(os.Environ(), session.EnvIndexDir+"="+filepath.Join(t.TempDir(), "index"),
		"GRAY_OWNER_PID="+strconv.Itoa(owner.Process.Pid))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gray start --head: %v\n%s", err, out)
	}
	s, err := session.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{s.PID(session.NodePIDFile), s.PID(session.RedisPIDFile)}
	t.Cleanup(func() {
		for _, p := range pids {
			if session.Alive(p) {
				syscall.Kill(-p, syscall.SIGKILL)
			}
		}
	})
	owner.Process.Kill()
	owner.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range pids {
		for session.Alive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs after its owner ended", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
