package monitor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/monitor"
	"github.com/gray-ml/gray/runtime/task"
)

const testTimeout = 500 * time.Millisecond

// beat runs a heartbeater for node id until the returned stop is called.
func beat(t *testing.T, store *control.Redis, id string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &monitor.Heartbeater{Store: store, Node: control.NodeInfo{ID: id, Resources: task.Resources{CPU: 1}},
		Interval: 50 * time.Millisecond, Logf: t.Logf}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("heartbeater %s: %v", id, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// runMonitor runs a monitor until the returned stop is called.
func runMonitor(t *testing.T, store *control.Redis, onDeath func(string, string, time.Duration)) (stop func()) {
	t.Helper()
	return runMonitorOn(t, store, onDeath)
}

// runMonitorOn is runMonitor over any node watcher.
func runMonitorOn(t *testing.T, store monitor.NodeWatcher, onDeath func(string, string, time.Duration)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor.Monitor{Store: store, Timeout: testTimeout, OnDeath: onDeath, Logf: t.Logf}
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitEvent waits for the next event of kind for node id.
func waitEvent(t *testing.T, evs <-chan control.NodeEvent, kind control.NodeEventKind, id string) control.NodeEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("the event channel closed")
			}
			if ev.Kind == kind && ev.Node.ID == id {
				return ev
			}
		case <-deadline:
			t.Fatalf("node %s never %v", id, kind)
		}
	}
}

// stampReads passes a monitor's reads through to the store and closes
// both once the monitor has read a change of heartbeat of nodes a and b.
type stampReads struct {
	monitor.NodeWatcher
	mu      sync.Mutex
	beats   map[string]string
	changed map[string]bool
	both    chan struct{}
	closed  bool
}

func (r *stampReads) HeartbeatStamps(ctx context.Context) (map[string]control.Stamp, error) {
	stamps, err := r.NodeWatcher.HeartbeatStamps(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, st := range stamps {
		if prev, ok := r.beats[id]; ok && prev != st.Beat && st.Alive {
			r.changed[id] = true
		}
		r.beats[id] = st.Beat
	}
	if r.changed["a"] && r.changed["b"] && !r.closed {
		close(r.both)
		r.closed = true
	}
	return stamps, err
}

func alive(t *testing.T, store *control.Redis, id string) bool {
	t.Helper()
	n, ok, err := store.Node(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("node %s: %v %v", id, ok, err)
	}
	return n.Alive
}

// twoNodes starts Redis and two beating nodes, a and b, and waits for both
// to join, in either order. It returns the store, its node events (watched
// from before the joins, until the test ends) and a function that stops b's
// heartbeat.
func twoNodes(t *testing.T) (store *control.Redis, evs <-chan control.NodeEvent, stopB func()) {
	t.Helper()
	store = clustertest.StartRedis(t).Dial(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	evs, err := store.WatchNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	beat(t, store, "a")
	stopB = beat(t, store, "b")
	deadline := time.After(20 * time.Second)
	for joined := map[string]bool{}; !joined["a"] || !joined["b"]; {
		select {
		case ev := <-evs:
			joined[ev.Node.ID] = joined[ev.Node.ID] || ev.Kind == control.NodeJoined
		case <-deadline:
			t.Fatalf("nodes joined: %v, want a and b", joined)
		}
	}
	return store, evs, stopB
}

func TestSilentNodeIsDeclaredDead(t *testing.T) {
	store, evs, stopB := twoNodes(t)
	deaths := make(chan time.Duration, 4)
	runMonitor(t, store, func(id, reason string, silent time.Duration) { deaths <- silent })

	stopB()
	stopped := time.Now()
	ev := waitEvent(t, evs, control.NodeDied, "b")
	t.Logf("node b declared dead %v after its last heartbeat was due to stop (timeout %v): %s",
		time.Since(stopped).Round(time.Millisecond), testTimeout, ev.Reason)
	if ev.Reason == "" {
		t.Error("the death has no reason")
	}
	if silent := <-deaths; silent <= testTimeout {
		t.Errorf("declared dead after %v of silence, before the timeout %v", silent, testTimeout)
	}
	if !alive(t, store, "a") {
		t.Error("node a, still beating, was declared dead")
	}
}

func TestRestartedMonitorCarriesOn(t *testing.T) {
	r := clustertest.StartRedis(t)
	store := r.Dial(t, "")
	beat(t, store, "a")
	stopB := beat(t, store, "b")
	// The first monitor runs until it has followed a heartbeat of each
	// node (its state the restart loses), then the head restarts: a
	// second monitor, another client.
	reads := &stampReads{NodeWatcher: store, beats: map[string]string{}, changed: map[string]bool{}, both: make(chan struct{})}
	first := runMonitorOn(t, reads, nil)
	select {
	case <-reads.both:
	case <-time.After(20 * time.Second):
		t.Fatal("the first monitor never saw both nodes' heartbeats change")
	}
	first()
	second := r.Dial(t, "")
	died := make(chan string, 4)
	runMonitor(t, second, func(id, _ string, _ time.Duration) { died <- id })
	stopB()
	select {
	case id := <-died:
		if id != "b" {
			t.Fatalf("the second monitor declared %s dead, want b", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second monitor never declared the silent node dead")
	}
	if !alive(t, store, "a") {
		t.Error("node a, still beating, was declared dead")
	}
}

func TestHeartbeaterRegistersAgainAfterRedisLostIt(t *testing.T) {
	r := clustertest.StartRedis(t)
	store := r.Dial(t, "")
	beat(t, store, "a")
	alive := func() bool {
		n, ok, err := store.Node(context.Background(), "a")
		return err == nil && ok && n.Alive
	}
	clustertest.WaitFor(t, 20*time.Second, "node a to register", alive)
	// Redis comes back empty: same port, a new directory without the
	// append-only file.
	r.Kill()
	r.Config.Dir = t.TempDir()
	r.Restart(t)
	clustertest.WaitFor(t, 20*time.Second, "node a to register again after Redis lost it", alive)
}

func TestHeartbeaterStopsWhenDeclaredDead(t *testing.T) {
	r := clustertest.StartRedis(t)
	store := r.Dial(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := &monitor.Heartbeater{Store: store, Node: control.NodeInfo{ID: "z"}, Interval: 20 * time.Millisecond, Logf: t.Logf}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	clustertest.WaitFor(t, 20*time.Second, "node z to register", func() bool { _, ok, _ := store.Node(ctx, "z"); return ok })
	if err := store.MarkDead(ctx, "z", "test"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, control.ErrNodeDead) {
		t.Fatalf("Run = %v, want ErrNodeDead", err)
	}
}

// A node declared dead leaves the object-location table of every job,
// whether or not the job's driver is alive to say so: the monitor removes
// its entries when it declares the death, before it reports it.
func TestDeadNodesObjectsLeaveTheLocationTable(t *testing.T) {
	r := clustertest.StartRedis(t)
	store := r.Dial(t, "")
	ctx := context.Background()
	job := r.Dial(t, "job-1")
	if err := job.RegisterJob(ctx, control.JobInfo{ID: "job-1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	stopA := beat(t, store, "a")
	beat(t, store, "b")
	// A node stopped before its first heartbeat registered it was never
	// there to die: wait until both are registered.
	for _, id := range []string{"a", "b"} {
		clustertest.WaitFor(t, 20*time.Second, "node "+id+" to register", func() bool {
			_, ok, _ := store.Node(ctx, id)
			return ok
		})
	}
	obj := ids.Return(ids.Child(ids.Root(5, true), 1), 0)
	job.AddLocation(obj, "a")
	job.AddLocation(obj, "b")
	if err := job.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The job's driver is gone: only the monitor can clean up.
	job.Close()
	deaths := make(chan string, 4)
	runMonitor(t, store, func(id, reason string, silent time.Duration) { deaths <- id })
	stopA()
	select {
	case id := <-deaths:
		if id != "a" {
			t.Fatalf("node %s declared dead, want a", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("node a was never declared dead")
	}
	reader := r.Dial(t, "job-1")
	if locs, err := reader.Locations(ctx, obj); err != nil || !slices.Equal(locs, []string{"b"}) {
		t.Fatalf("after node a's death the object is listed on %q (%v), want [b]", locs, err)
	}
}

// A node its caller cannot reach (Unreachable: a lost connection) is
// declared dead once its heartbeat, too, is silent for Confirm, long
// before Timeout; one that cannot be reached but still beats is not.
func TestUnreachableSilentNodeIsDeadAfterConfirm(t *testing.T) {
	store, evs, stopB := twoNodes(t)
	since := time.Now()
	m := &monitor.Monitor{Store: store, Timeout: time.Hour, Confirm: 200 * time.Millisecond, Logf: t.Logf,
		Unreachable: func(id string) (time.Time, bool) { return since, true }}
	mctx, stopMonitor := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(mctx); close(done) }()
	defer func() { stopMonitor(); <-done }()

	stopB()
	ev := waitEvent(t, evs, control.NodeDied, "b")
	if !strings.Contains(ev.Reason, "connection was lost") {
		t.Errorf("b died %q, want by its lost connection", ev.Reason)
	}
	if !alive(t, store, "a") {
		t.Error("a, unreachable but beating, was declared dead")
	}
}
