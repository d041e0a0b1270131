package control

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer runs a real redis-server for one test.
func startServer(t testing.TB) (*RedisServer, ServerConfig) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian package redis-server; `make deps` installs it)")
	}
	cfg := ServerConfig{Port: freePort(t), Dir: t.TempDir(), Password: testToken}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := StartRedisServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, cfg
}

func dial(t testing.TB, addr, job string) *Redis {
	t.Helper()
	r, err := DialRedis(context.Background(), RedisConfig{Addr: addr, Password: testToken}, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestStartRedisServerRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"no port", ServerConfig{Dir: "x", Password: "p"}, "not a TCP port"},
		{"no dir", ServerConfig{Port: 1234, Password: "p"}, "no directory"},
		{"no password", ServerConfig{Port: 1234, Dir: "x"}, "no password"},
		{"spaces", ServerConfig{Port: 1234, Dir: "x", Password: "a b"}, "must not contain spaces"},
		{"fsync", ServerConfig{Port: 1234, Dir: "x", Password: "p", Fsync: "never"}, "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := StartRedisServer(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestStartRedisServerNamesTheMissingPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartRedisServer(context.Background(), ServerConfig{Port: 1234, Dir: t.TempDir(), Password: "p"})
	if !errors.Is(err, ErrNoRedisServer) || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("err = %v, want ErrNoRedisServer naming the Debian package", err)
	}
}

func TestRedisRefusesClientsWithoutTheToken(t *testing.T) {
	s, _ := startServer(t)
	for _, pw := range []string{"", "wrong"} {
		_, err := DialRedis(context.Background(), RedisConfig{Addr: s.Addr(), Password: pw}, "")
		if !errors.Is(err, ErrRedisAuth) || !strings.Contains(err.Error(), "token") {
			t.Errorf("password %q: err = %v, want a refusal naming the token", pw, err)
		}
	}
}

func TestNodeTable(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx := context.Background()
	n := NodeInfo{ID: "n1", IP: "127.0.0.1", Resources: task.Resources{CPU: 4, Custom: map[string]float64{"disk": 1}}}
	if err := r.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	load := NodeLoad{Used: task.Resources{CPU: 2}, Tasks: 3, Workers: 2, Waiting: []task.Resources{{GPU: 8}}}
	if err := r.Heartbeat(ctx, "n1", load); err != nil {
		t.Fatal(err)
	}
	if err := r.Heartbeat(ctx, "nobody", load); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("heartbeat of an unregistered node: err = %v, want ErrUnknownNode", err)
	}
	nodes, err := r.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !nodes[0].Alive || nodes[0].Resources.Custom["disk"] != 1 || nodes[0].Load.Used.CPU != 2 ||
		len(nodes[0].Load.Waiting) != 1 || nodes[0].Heartbeat.IsZero() {
		t.Fatalf("nodes = %+v", nodes)
	}
	did, err := r.DeclareDead(ctx, "n1", "no heartbeat for 1.5s")
	if err != nil || !did {
		t.Fatalf("DeclareDead = %v, %v; want true", did, err)
	}
	if did, _ := r.DeclareDead(ctx, "n1", "again"); did {
		t.Fatal("a second DeclareDead of a dead node claims it did it")
	}
	if err := r.Heartbeat(ctx, "n1", load); !errors.Is(err, ErrNodeDead) {
		t.Fatalf("heartbeat of a dead node: err = %v, want ErrNodeDead", err)
	}
	got, ok, err := r.Node(ctx, "n1")
	if err != nil || !ok || got.Alive || got.Death != "no heartbeat for 1.5s" {
		t.Fatalf("Node = %+v, %v, %v; want dead with the first reason", got, ok, err)
	}
	if l := got.Load; l.Used.CPU != 0 || l.Tasks != 0 || l.Workers != 0 || len(l.Waiting) != 0 {
		t.Fatalf("a dead node's load = %+v; want nothing held (its last heartbeat's load is gone with it)", l)
	}
}

// A monitor's verdict on a silent node holds only if the node has not
// beaten since the read that found it silent: a head started again under
// the same ID in between stays alive.
func TestDeclareSilentOnlyIfStillSilent(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx := context.Background()
	if err := r.RegisterNode(ctx, NodeInfo{ID: "h"}); err != nil {
		t.Fatal(err)
	}
	stamps, err := r.HeartbeatStamps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := stamps["h"].Beat
	if err := r.Heartbeat(ctx, "h", NodeLoad{Tasks: 1}); err != nil { // another load: another stamp
		t.Fatal(err)
	}
	if did, err := r.DeclareSilent(ctx, "h", seen, "silent"); err != nil || did {
		t.Fatalf("DeclareSilent with an old beat = %v, %v; want false: it beat since", did, err)
	}
	if n, _, _ := r.Node(ctx, "h"); !n.Alive {
		t.Fatal("a node that beat since the read was declared dead")
	}
	stamps, _ = r.HeartbeatStamps(ctx)
	if did, err := r.DeclareSilent(ctx, "h", stamps["h"].Beat, "silent"); err != nil || !did {
		t.Fatalf("DeclareSilent with its last beat = %v, %v; want true", did, err)
	}
}

func TestWritesAreBatched(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "job1")
	other := dial(t, s.Addr(), "job2")
	ctx := context.Background()
	root := ids.Root(1, true)
	const n = 2000
	// Hold the writer back until everything is queued, as a busy Redis
	// would: the queue must then go out in a few pipelines.
	release := make(chan struct{})
	r.wmu.Lock()
	r.batchHook = func() { <-release }
	r.wmu.Unlock()
	before := r.Stats()
	for i := range n {
		r.AddLocation(ids.Return(ids.Child(root, uint64(i)), 0), "node-a")
	}
	r.RemoveLocation(ids.Return(ids.Child(root, 0), 0), "node-a")
	close(release)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	// n+1 writes: one pipeline, or 2 if the first write went alone before
	// the hook held the writer.
	if st.Commands-before.Commands < n+1 || st.RoundTrips-before.RoundTrips > 3 || st.Pending != 0 {
		t.Fatalf("stats %+v (before %+v): %d queued writes should go in at most 3 round trips", st, before, n+1)
	}
	if locs, err := r.Locations(ctx, ids.Return(ids.Child(root, 1), 0)); err != nil || len(locs) != 1 || locs[0] != "node-a" {
		t.Fatalf("Locations = %v, %v", locs, err)
	}
	if locs, _ := r.Locations(ctx, ids.Return(ids.Child(root, 0), 0)); len(locs) != 0 {
		t.Fatalf("a removed location is still listed: %v", locs)
	}
	if locs, _ := other.Locations(ctx, ids.Return(ids.Child(root, 1), 0)); len(locs) != 0 {
		t.Fatalf("another job sees job1's locations: %v", locs)
	}
}

func TestJobTable(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "j1")
	ctx := context.Background()
	if err := r.RegisterJob(ctx, JobInfo{ID: "j1", Driver: "host pid 1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterJob(ctx, JobInfo{}); err == nil {
		t.Fatal("a job without an ID was accepted")
	}
	if err := r.EndJob(ctx, "j1"); err != nil {
		t.Fatal(err)
	}
	jobs, err := r.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].Ended.IsZero() {
		t.Fatalf("Jobs = %+v, %v", jobs, err)
	}
}

func TestWatchNodes(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.RegisterNode(ctx, NodeInfo{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	evs, err := r.WatchNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func() NodeEvent {
		t.Helper()
		select {
		case ev := <-evs:
			return ev
		case <-ctx.Done():
			t.Fatal("no node event")
		}
		return NodeEvent{}
	}
	if ev := next(); ev.Kind != NodeJoined || ev.Node.ID != "old" {
		t.Fatalf("first event %+v, want the live node", ev)
	}
	if err := r.RegisterNode(ctx, NodeInfo{ID: "new"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Kind != NodeJoined || ev.Node.ID != "new" {
		t.Fatalf("event %+v, want new joined", ev)
	}
	if err := r.MarkDead(ctx, "old", "test"); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Kind != NodeDied || ev.Node.ID != "old" || ev.Reason != "test" {
		t.Fatalf("event %+v, want old died", ev)
	}
}

// TestRedisRestart kills the real redis-server and starts it again on the
// same directory: what was written before survives (append-only file),
// writes queued meanwhile are sent once it is back, and reads work again.
func TestRedisRestart(t *testing.T) {
	s, cfg := startServer(t)
	r := dial(t, s.Addr(), "job")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := ids.Root(2, true)
	r.AddLocation(ids.Return(root, 0), "before")
	if err := r.RegisterNode(ctx, NodeInfo{ID: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	r.AddLocation(ids.Return(ids.Child(root, 1), 0), "during")
	s2, err := StartRedisServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Stop)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[ids.TaskID]string{root: "before", ids.Child(root, 1): "during"} {
		got, err := r.Locations(ctx, ids.Return(id, 0))
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("after the restart Locations = %q, %v; want [%s]", got, err, want)
		}
	}
	if err := r.Heartbeat(ctx, "n", NodeLoad{}); err != nil {
		t.Fatalf("heartbeat after the restart: %v (the node table should have survived)", err)
	}
}

// TestWatchNodesAcrossARedisRestart: a watcher started before Redis
// restarted still reports a death recorded after.
func TestWatchNodesAcrossARedisRestart(t *testing.T) {
	s, cfg := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.RegisterNode(ctx, NodeInfo{ID: "n"}); err != nil {
		t.Fatal(err)
	}
	evs, err := r.WatchNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-evs; ev.Kind != NodeJoined {
		t.Fatalf("first event %+v", ev)
	}
	s.Kill()
	s2, err := StartRedisServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Stop)
	if err := r.MarkDead(ctx, "n", "after the restart"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-evs:
		if ev.Kind != NodeDied || ev.Reason != "after the restart" {
			t.Fatalf("event %+v, want n died", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watcher never reported the death")
	}
}
