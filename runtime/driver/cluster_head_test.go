package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/cluster"
)

// onWorker runs only on the node that has the "wk" resource.
var onWorker = gray.Func1("test.cluster.onWorker", func(ctx context.Context, x int) (string, error) {
	return os.Getenv(cluster.EnvNodeID), nil
}, gray.Resource("wk", 1))

// The head's daemon dies (issue 27, defect 2): the other node declares it
// dead and says what to do, a running driver carries on with the nodes
// left, and a standby head pointed at the same Redis (`gray start --head
// --redis-address`) takes over: it detects deaths again, and a new driver
// starts and runs work. The times are logged (benchmarks/results/cluster.md), never
// asserted.
func TestClusterStandbyHeadTakesOver(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, CPUsPerNode: 1,
		NodeResources: map[int]map[string]float64{1: {"wk": 1}},
		NodeTimeout:   time.Second, HeartbeatInterval: 100 * time.Millisecond})
	initCluster(t, c)
	waitResources(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	worker := c.Node(1)
	if got, err := gray.Get(ctx, onWorker.Remote(1)); err != nil || got != worker.ID {
		t.Fatalf("before the head died: ran on %q, %v; want node %s", got, err, worker.ID)
	}

	head := c.Node(0)
	c.KillNode(0)
	killed := time.Now()
	c.WaitStatus(30*time.Second, "the other node to declare the head dead", func(st clustertest.Status) bool {
		h, ok := st.Node(head.ID)
		return ok && !h.Alive
	})
	detected := time.Since(killed)
	logged, err := os.ReadFile(filepath.Join(worker.TempDir, "logs", "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "the head node "+head.ID+" is dead") || !strings.Contains(string(logged), "gray start --head") {
		t.Fatalf("the node's log does not say the head died and what to do:\n%s", logged)
	}
	// The running driver carries on with the node left.
	if got, err := gray.Get(ctx, onWorker.Remote(2)); err != nil || got != worker.ID {
		t.Fatalf("after the head died: ran on %q, %v; want node %s", got, err, worker.ID)
	}

	started := time.Now()
	standby := c.StartStandby()
	up := time.Since(started)
	// A new driver starts on the standby's cluster and runs work.
	gray.Shutdown()
	if err := gray.Init(ctx, gray.Options{Address: c.Address(), Token: c.Token()}); err != nil {
		t.Fatalf("a new driver after the standby head %s took over: %v", standby.ID, err)
	}
	if got, err := gray.Get(ctx, onWorker.Remote(3)); err != nil || got != worker.ID {
		t.Fatalf("a new driver after the takeover: ran on %q, %v; want node %s", got, err, worker.ID)
	}
	served := time.Since(started)
	// The standby's monitor declares deaths.
	c.KillNode(1)
	c.WaitStatus(30*time.Second, "the standby head's monitor to declare the killed node dead", func(st clustertest.Status) bool {
		n, ok := st.Node(worker.ID)
		return ok && !n.Alive
	})
	t.Logf("head killed: declared dead by the other node %v later (timeout 1 s); the standby head was up %v after its start, and served a new driver's task %v after it",
		detected.Round(time.Millisecond), up.Round(time.Millisecond), served.Round(time.Millisecond))
}
