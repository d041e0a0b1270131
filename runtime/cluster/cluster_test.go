package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

var token = []byte("0123456789abcdef0123456789abcdef")

// registry is a control store that records the node's registration.
type registry struct {
	mu    sync.Mutex
	node  control.NodeInfo
	beats int
}

func (r *registry) RegisterNode(_ context.Context, n control.NodeInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node = n
	return nil
}

func (r *registry) Heartbeat(context.Context, string, control.NodeLoad) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beats++
	return nil
}

// startNode runs a node daemon until the test ends and returns its lease
// address.
func startNode(t *testing.T, id string, res task.Resources) string {
	t.Helper()
	return startNodeIn(t, id, res, t.TempDir())
}

// startNodeIn is startNode with the node's temp dir (its executable cache
// is dir/exe).
func startNodeIn(t *testing.T, id string, res task.Resources, dir string) string {
	t.Helper()
	return startNodeConfig(t, NodeConfig{ID: id, TempDir: dir, Resources: res})
}

// startNodeConfig starts a node of cfg on loopback with the test's token
// and registry, and returns its address.
func startNodeConfig(t *testing.T, cfg NodeConfig) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	cfg.IP, cfg.Token, cfg.Registry, cfg.HeartbeatInterval = "127.0.0.1", token, &registry{}, 50*time.Millisecond
	cfg.Ready = func(a string) { addr <- a }
	go func() {
		done <- ServeNode(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not start listening")
	}
	return ""
}

// scheduler records what a Driver tells it.
type scheduler struct {
	added  chan task.Resources
	gone   chan string
	exited chan string
}

func newScheduler() *scheduler {
	return &scheduler{added: make(chan task.Resources, 4), gone: make(chan string, 4), exited: make(chan string, 4)}
}

func (s *scheduler) AddNodeGrant(_ sched.NodeID, _ string, res task.Resources, _ []int, _ task.Resources) error {
	s.added <- res
	return nil
}
func (s *scheduler) GrantView(sched.NodeID) (sched.GrantView, bool) { return sched.GrantView{}, false }
func (s *scheduler) GrowGrant(sched.NodeID, task.Resources, []int)  {}
func (s *scheduler) ReclaimGrant(sched.NodeID, task.Resources)      {}
func (s *scheduler) NodeGone(_ sched.NodeID, why string)            { s.gone <- why }
func (s *scheduler) WorkerExited(_ sched.WorkerID, why error)       { s.exited <- why.Error() }

func recv[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// A driver leases a node: the node caches the driver's executable, grants
// what it has free (nothing to a second driver while the first holds it
// all), starts workers with the driver's environment and its own node ID,
// and reports their ends.
func TestLeaseStartsWorkersAndGrantsWhatIsFree(t *testing.T) {
	addr := startNode(t, "n1", task.Resources{CPU: 2})
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$GRAY_NODE_ID $GREETING\" > \"$OUT\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(DriverConfig{Token: token, Job: "job1", Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler()
	d.Attach(s)
	t.Cleanup(func() { d.Close() })
	ctx := context.Background()
	info := control.NodeInfo{ID: "n1", NodeAddr: addr, Resources: task.Resources{CPU: 2}}
	if err := d.Join(ctx, info); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, s.added, "the node"); got.CPU != 2 {
		t.Fatalf("granted %s, want CPU=2", got)
	}
	out := filepath.Join(dir, "out")
	d.StartWorker(1, sched.FirstWorker(1), []string{"GREETING=hello", "OUT=" + out})
	if why := recv(t, s.exited, "the worker's end"); !strings.Contains(why, "exit status 3") {
		t.Fatalf("the worker ended with %q, want exit status 3", why)
	}
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "n1 hello" {
		t.Fatalf("the worker wrote %q (%v), want \"n1 hello\"", b, err)
	}

	d2, err := NewDriver(DriverConfig{Token: token, Job: "job2", Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	s2 := newScheduler()
	d2.Attach(s2)
	t.Cleanup(func() { d2.Close() })
	if err := d2.Join(ctx, info); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, s2.added, "the node"); got.CPU != 0 {
		t.Fatalf("the second driver was granted %s while the first holds every CPU", got)
	}
}

// A driver without the cluster token is refused.
func TestLeaseWithoutTheTokenIsRefused(t *testing.T) {
	addr := startNode(t, "n1", task.Resources{CPU: 1})
	d, err := NewDriver(DriverConfig{Token: []byte("not the token at all, not at all"), Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	d.Attach(newScheduler())
	defer d.Close()
	err = d.Join(context.Background(), control.NodeInfo{ID: "n1", NodeAddr: addr})
	if !errors.Is(err, transfer.ErrUnauthorized) {
		t.Fatalf("join with a wrong token: %v, want ErrUnauthorized", err)
	}
}

// A driver built for another platform gets a clear error.
func TestLeaseRefusesAnotherPlatform(t *testing.T) {
	addr := startNode(t, "n1", task.Resources{CPU: 1})
	c, err := transfer.Dial(context.Background(), addr, token)
	if err != nil {
		t.Fatal(err)
	}
	conn := wire.New(c)
	defer conn.Close()
	err = conn.Send(msgHello, func(b []byte) []byte {
		b = wire.AppendString(b, "job")
		b = wire.AppendString(b, "plan9")
		b = wire.AppendString(b, "mips")
		b = append(b, make([]byte, 32)...)
		b = wire.AppendUvarint(b, 10)
		return appendStrings(appendRes(b, task.Resources{CPU: 1}), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	typ, payload, err := conn.Recv()
	if err != nil || typ != msgWelcome {
		t.Fatalf("reply %d, %v", typ, err)
	}
	dec := wire.Dec{B: payload}
	status, msg := dec.Byte(), dec.String()
	if status == 0 || !strings.Contains(msg, "plan9/mips") || !strings.Contains(msg, "GOOS=") {
		t.Fatalf("status %d, message %q: want a refusal naming both platforms and how to build", status, msg)
	}
}
