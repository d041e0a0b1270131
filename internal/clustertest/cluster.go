package clustertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/session"
	"github.com/gray-ml/gray/runtime/task"
)

// Options shape a test cluster.
type Options struct {
	// Nodes is how many nodes join the head (so the cluster has Nodes+1).
	Nodes int
	// CPUsPerNode is each node's --num-cpus, the head's too; 0 means 1.
	CPUsPerNode float64
	// GPUsPerNode is each node's --num-gpus (fake GPUs for scheduling).
	GPUsPerNode float64
	// Resources are each node's custom resources.
	Resources map[string]float64
	// NodeResources, by node index (0 is the head), replace Resources for
	// that node.
	NodeResources map[int]map[string]float64
	// NodeTimeout is every node's --node-timeout: the head's monitor
	// declares nodes dead after it, the other nodes the head (0: the
	// default, 1.5 s).
	NodeTimeout time.Duration
	// HeartbeatInterval is every node's --heartbeat-interval (0: 200 ms).
	HeartbeatInterval time.Duration
	// KeepEnded is the head's --keep-ended: how long dead nodes and
	// ended jobs stay listed (0: the default, 10 minutes).
	KeepEnded time.Duration
	// MaxTaskRecords is the head's --max-task-records (0: the default).
	MaxTaskRecords int
	// SameIP puts every node on 127.0.0.1; by default node i listens on
	// 127.0.0.(i+1), as on separate machines.
	SameIP bool
	// Env is added to the environment of every gray command.
	Env []string
}

// Cluster is a running test cluster: a head and nodes, each a `gray node`
// process of its own, found through a session index of the test's own.
type Cluster struct {
	t     testing.TB
	opts  Options
	bin   string
	dir   string // holds the index and every node's temp dir
	index string
	env   []string
	// JoinCommand is the line `gray start --head` printed for joining
	// (gray start --address IP:PORT --token-file FILE).
	JoinCommand string
	// HeadOutput is all that `gray start --head` printed.
	HeadOutput string

	mu       sync.Mutex
	nodes    []*Node
	pids     []int // every daemon and redis-server pid seen, for the final check
	stopped  bool
	stopErrs error
}

// Node is one node of a test cluster.
type Node struct {
	Index   int // 0 is the head
	ID, IP  string
	TempDir string
}

// Start builds the gray binary (once per test binary), starts a head with
// `gray start --head` and opts.Nodes nodes with `gray start --address`,
// each with its own temp dir, on free ports of loopback addresses. When
// the test ends it runs `gray stop` and fails the test if any process of
// the cluster is left.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server; `make deps` installs it)")
	}
	if opts.CPUsPerNode == 0 {
		opts.CPUsPerNode = 1
	}
	dir := t.TempDir()
	c := &Cluster{t: t, opts: opts, bin: BuildGray(t), dir: dir, index: filepath.Join(dir, "sessions")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, session.EnvAddress+"=") && !strings.HasPrefix(kv, session.EnvToken+"=") &&
			!strings.HasPrefix(kv, session.EnvIndexDir+"=") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env, session.EnvIndexDir+"="+c.index)
	// The nodes stop by themselves should this test binary die (a
	// timeout) before its cleanup runs `gray stop`.
	c.env = append(c.env, "GRAY_OWNER_PID="+strconv.Itoa(os.Getpid()))
	c.env = append(c.env, opts.Env...)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	out, err := c.Gray(append([]string{"start", "--head", "--port", "0"}, c.nodeFlags(0)...)...)
	if err != nil {
		t.Fatalf("gray start --head: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^gray start --address \S+ --token-file \S+$`).FindString(out)
	if m == "" {
		t.Fatalf("gray start --head printed no join command:\n%s", out)
	}
	c.JoinCommand, c.HeadOutput = m, out
	c.addStarted(0)
	for i := 1; i <= opts.Nodes; i++ {
		c.AddNode()
	}
	return c
}

func (c *Cluster) nodeFlags(i int) []string {
	ip := "127.0.0.1"
	if !c.opts.SameIP {
		ip = "127.0.0." + strconv.Itoa(i+1)
	}
	f := []string{
		"--temp-dir", filepath.Join(c.dir, "node"+strconv.Itoa(i)),
		"--node-ip-address", ip,
		"--num-cpus", strconv.FormatFloat(c.opts.CPUsPerNode, 'g', -1, 64),
		"--num-gpus", strconv.FormatFloat(c.opts.GPUsPerNode, 'g', -1, 64),
	}
	res := c.opts.Resources
	if r, ok := c.opts.NodeResources[i]; ok {
		res = r
	}
	if len(res) > 0 {
		b, _ := json.Marshal(res)
		f = append(f, "--resources", string(b))
	}
	if c.opts.HeartbeatInterval > 0 {
		f = append(f, "--heartbeat-interval", c.opts.HeartbeatInterval.String())
	}
	if i == 0 && c.opts.KeepEnded > 0 {
		f = append(f, "--keep-ended", c.opts.KeepEnded.String())
	}
	if i == 0 && c.opts.MaxTaskRecords > 0 {
		f = append(f, "--max-task-records", strconv.Itoa(c.opts.MaxTaskRecords))
	}
	if c.opts.NodeTimeout > 0 { // the head's monitor, and the other nodes' watch of the head
		f = append(f, "--node-timeout", c.opts.NodeTimeout.String())
	}
	return f
}

// AddNode starts one more node that joins the cluster, and returns it.
func (c *Cluster) AddNode() *Node {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.nodes)
	c.mu.Unlock()
	args := append([]string{"start", "--address", c.Address(), "--token-file", c.TokenFile()}, c.nodeFlags(i)...)
	if out, err := c.Gray(args...); err != nil {
		c.t.Fatalf("gray start --address: %v\n%s", err, out)
	}
	return c.addStarted(i)
}

// RestartHead runs `gray start --head` again in the head's temp dir, as
// after the head daemon died (KillNode(0)): the new head takes over the
// cluster, its address and token, restarting Redis on its append-only
// file and the monitor.
func (c *Cluster) RestartHead() {
	c.t.Helper()
	args := append([]string{"start", "--head"}, c.nodeFlags(0)...)
	if out, err := c.Gray(args...); err != nil {
		c.t.Fatalf("gray start --head again: %v\n%s", err, out)
	}
	s := c.head()
	c.mu.Lock()
	c.pids = append(c.pids, s.PID(session.NodePIDFile), s.PID(session.RedisPIDFile))
	c.mu.Unlock()
}

// StartStandby starts a standby head on a machine of its own (the next
// node index, its own temp dir and address): `gray start --head
// --redis-address` pointed at the cluster's Redis, as after the head's
// machine died. It returns the new head.
func (c *Cluster) StartStandby() *Node {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.nodes)
	c.mu.Unlock()
	args := append([]string{"start", "--head", "--redis-address", c.Address(), "--token", c.Token()}, c.nodeFlags(i)...)
	if out, err := c.Gray(args...); err != nil {
		c.t.Fatalf("gray start --head --redis-address: %v\n%s", err, out)
	}
	return c.addStarted(i)
}

// addStarted records node i, which `gray start` started.
func (c *Cluster) addStarted(i int) *Node {
	c.t.Helper()
	dir := filepath.Join(c.dir, "node"+strconv.Itoa(i))
	s, err := session.Read(dir)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &Node{Index: i, ID: s.NodeID, IP: s.NodeIP, TempDir: dir}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.pids = append(c.pids, s.PID(session.NodePIDFile))
	if s.Head && !s.ExternalRedis {
		c.pids = append(c.pids, s.PID(session.RedisPIDFile))
	}
	c.mu.Unlock()
	return n
}

// Gray runs the gray binary with the cluster's environment and returns
// its output (stdout and stderr).
func (c *Cluster) Gray(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Env returns the environment of the cluster's gray commands; a driver
// started with it (plus GRAY_ADDRESS=auto) finds the cluster.
func (c *Cluster) Env() []string { return append([]string(nil), c.env...) }

// Node returns node i (0 is the head).
func (c *Cluster) Node(i int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Size returns how many nodes were started, the head included.
func (c *Cluster) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}

func (c *Cluster) head() *session.Session {
	s, err := session.Read(filepath.Join(c.dir, "node0"))
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// Address returns the cluster's address, IP:PORT of its Redis.
func (c *Cluster) Address() string { return c.head().Address }

// Token returns the cluster token.
func (c *Cluster) Token() string { return c.head().Token }

// TokenFile returns the head's token file (0600), for --token-file.
func (c *Cluster) TokenFile() string { return c.head().TokenPath() }

// Dial connects a control-store client to the cluster for job.
func (c *Cluster) Dial(job string) *control.Redis {
	c.t.Helper()
	r, err := control.DialRedis(context.Background(), control.RedisConfig{Addr: c.Address(), Password: c.Token()}, job)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { r.Close() })
	return r
}

// KillNode kills node i's daemon and everything in its process group
// (its workers) with SIGKILL, as a crash would. Killing the head (0)
// leaves its redis-server running.
func (c *Cluster) KillNode(i int) {
	c.t.Helper()
	s, err := session.Read(c.Node(i).TempDir)
	if err != nil {
		c.t.Fatal(err)
	}
	pid := s.PID(session.NodePIDFile)
	if pid <= 0 {
		c.t.Fatalf("node %d has no daemon pid", i)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("killing node %d (pid %d): %v", i, pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for session.Alive(pid) {
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d (pid %d) survives SIGKILL", i, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RestartRedis kills the head's redis-server with SIGKILL and waits until
// the head has started it again (on the same append-only file) and it
// answers. It returns the new server's pid.
func (c *Cluster) RestartRedis() int {
	c.t.Helper()
	return c.WaitRedis(c.KillRedis())
}

// KillRedis kills the head's redis-server with SIGKILL and returns its
// pid; the head starts it again by itself (see WaitRedis).
func (c *Cluster) KillRedis() int {
	c.t.Helper()
	old := c.head().PID(session.RedisPIDFile)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		c.t.Fatalf("killing redis-server (pid %d): %v", old, err)
	}
	return old
}

// WaitRedis waits until the head has started redis-server again after
// the death of pid old and it answers, and returns the new pid.
func (c *Cluster) WaitRedis(old int) int {
	c.t.Helper()
	h := c.head()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pid := h.PID(session.RedisPIDFile); pid != old && session.Alive(pid) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			r, err := control.DialRedis(ctx, control.RedisConfig{Addr: h.Address, Password: h.Token}, "")
			cancel()
			if err == nil {
				r.Close()
				c.mu.Lock()
				c.pids = append(c.pids, pid)
				c.mu.Unlock()
				return pid
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatal("the head did not start redis-server again within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Status is what `gray status --json` prints (decoded from its
// snake_case keys by DecodeStatus).
type Status struct {
	Address                  string
	ReadAt                   time.Time // when gray status read the tables
	Nodes                    []NodeStatus
	Alive, Dead              int
	Total, Used              task.Resources
	StoreUsed, StoreCapacity int64
	Tasks, Actors, Workers   int
	Waiting                  []task.Resources
	Jobs                     []control.JobInfo
}

// NodeStatus is one node of a Status.
type NodeStatus struct {
	ID, IP, NodeAddr, ObjectAddr string
	Head, Alive                  bool
	Death                        string
	Resources, Used, Leased      task.Resources
	StoreUsed, StoreCapacity     int64
	Tasks, Actors, Workers       int
	Waiting                      []task.Resources
	Heartbeat, Started           time.Time
}

// Node returns the status of the node with the given ID.
func (s Status) Node(id string) (NodeStatus, bool) {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return NodeStatus{}, false
}

// Status runs `gray status --json` for the cluster's address (which
// answers while no head runs: Redis outlives the head's daemon).
func (c *Cluster) Status() (Status, error) {
	out, err := c.Gray("status", "--json", "--address", c.Address())
	if err != nil {
		return Status{}, fmt.Errorf("gray status: %w: %s", err, out)
	}
	st, err := DecodeStatus([]byte(out))
	if err != nil {
		return Status{}, fmt.Errorf("gray status --json printed %q: %w", out, err)
	}
	return st, nil
}

// WaitStatus polls `gray status --json` until ok accepts it, and returns
// that status; it fails the test after timeout.
func (c *Cluster) WaitStatus(timeout time.Duration, what string, ok func(Status) bool) Status {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last Status
	var lastErr error
	for {
		st, err := c.Status()
		if err == nil && ok(st) {
			return st
		}
		last, lastErr = st, err
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting %v for %s: last status %+v, error %v", timeout, what, last, lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop runs `gray stop` (once) and checks that no process of the cluster
// is left: no daemon, no redis-server, nothing in their process groups,
// nothing whose command line names the cluster's directory. Start
// registers it with t.Cleanup.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.stopErrs
	}
	c.stopped = true
	var errs []error
	if out, err := c.Gray("stop"); err != nil {
		errs = append(errs, fmt.Errorf("gray stop: %w\n%s", err, out))
	}
	// The head restarted redis-server meanwhile? Its last pid counts too.
	if h, err := session.Read(filepath.Join(c.dir, "node0")); err == nil {
		c.pids = append(c.pids, h.PID(session.RedisPIDFile))
	}
	if left := c.leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("gray stop left processes behind: %s", strings.Join(left, "; ")))
		for _, pid := range c.pids {
			if pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if ents, _ := os.ReadDir(c.index); len(ents) > 0 {
		errs = append(errs, fmt.Errorf("gray stop left %d session index entries", len(ents)))
	}
	c.stopErrs = errors.Join(errs...)
	return c.stopErrs
}

// leftovers lists live processes of the cluster.
func (c *Cluster) leftovers() []string {
	var left []string
	groups := map[int]bool{}
	for _, pid := range c.pids {
		if pid > 0 {
			groups[pid] = true
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !session.Alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cmd := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		if groups[pid] || groups[pgid(pid)] || strings.Contains(cmd, c.dir) {
			left = append(left, fmt.Sprintf("pid %d (%s)", pid, cmd))
		}
	}
	return left
}

func pgid(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		return -1
	}
	return g
}

type built struct {
	once sync.Once
	path string
	err  error
}

// builds are the commands built by this test binary, by name.
var builds = map[string]*built{"gray": {}, "train": {}}

// BuildGray builds cmd/gray once per test binary and returns the
// binary's path. It lives in a per-user cache directory keyed by the
// module's directory (go build keeps it quick when nothing changed).
func BuildGray(t testing.TB) string { return BuildCommand(t, "gray") }

// BuildCommand builds cmd/<name> (gray or train) as BuildGray does.
func BuildCommand(t testing.TB, name string) string {
	t.Helper()
	b := builds[name]
	if b == nil {
		t.Fatalf("clustertest: no command %q to build", name)
	}
	b.once.Do(func() { b.path, b.err = build(name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func build(name string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("clustertest: building gray needs the go command: %w", err)
	}
	gomod, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("clustertest: go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "gray-clustertest-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("clustertest: %w", err)
	}
	tmp, err := os.CreateTemp(dir, name+"-*")
	if err != nil {
		return "", fmt.Errorf("clustertest: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command(goBin, "build", "-o", tmp.Name(), "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("clustertest: go build ./cmd/%s: %w\n%s", name, err, out)
	}
	// Renaming is atomic: another test binary may run the old one still.
	final := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("clustertest: %w", err)
	}
	return final, nil
}

// NodePID returns the pid of node i's daemon (its workers share its
// process group).
func (c *Cluster) NodePID(i int) int {
	c.t.Helper()
	s, err := session.Read(c.Node(i).TempDir)
	if err != nil {
		c.t.Fatal(err)
	}
	return s.PID(session.NodePIDFile)
}

// WaitFor polls ok every 20 ms until it holds, and fails the test after
// timeout, naming what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
