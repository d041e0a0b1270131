package node

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/gray-ml/gray/runtime/cluster"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
)

// A node that drives a cluster, without processes: fakeRemote plays the
// other nodes' daemons. A worker it is asked to start is a fakeWorker that
// dials the node's TCP listener with the cluster token, as a leased worker
// process does, and reports its end with WorkerExited.

// fakeRemote is the cluster's node daemons, played by the test.
type fakeRemote struct {
	h     *harness
	token []byte
	wg    sync.WaitGroup // the workers' goroutines
	mu    sync.Mutex
	conns map[sched.WorkerID]net.Conn
}

// newClusterHarness starts a node that drives a cluster, with no
// resources of its own: AddNode gives it nodes, whose workers the test
// plays.
func newClusterHarness(t *testing.T) (*harness, *fakeRemote) {
	t.Helper()
	return newClusterHarnessWith(t, Config{})
}

// newClusterHarnessWith is newClusterHarness with cfg's other settings.
func newClusterHarnessWith(t *testing.T, cfg Config) (*harness, *fakeRemote) {
	t.Helper()
	r := &fakeRemote{token: bytes.Repeat([]byte{7}, 32), conns: map[sched.WorkerID]net.Conn{}}
	t.Cleanup(r.wg.Wait) // after the node's shutdown ended every worker
	st, err := objstore.Open(objstore.Options{Dir: t.TempDir(), Capacity: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shared, cfg.Cluster = st, &cluster.DriverNode{Remote: r, Token: r.token, Listen: "127.0.0.1:0"}
	h := newHarnessWith(t, cfg)
	r.h = h
	h.worker() // the local pool's (at least one): it idles, with no CPU to run tasks
	return h, r
}

// StartWorker starts a fake worker w (Remote).
func (r *fakeRemote) StartWorker(k sched.NodeID, w sched.WorkerID, env []string) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		c, err := transfer.Dial(ctx, r.h.n.WorkerAddress(), r.token)
		cancel()
		if err == nil {
			r.mu.Lock()
			r.conns[w] = c
			r.mu.Unlock()
			err = r.h.play(c, int(w))
		}
		r.h.n.WorkerExited(w, err)
	}()
}

// StopWorker ends fake worker w's connection (Remote).
func (r *fakeRemote) StopWorker(k sched.NodeID, w sched.WorkerID) {
	r.mu.Lock()
	c := r.conns[w]
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// retried returns how many tasks the node counts runs of (rerun,
// retryPull).
func (h *harness) retried() int {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	return h.n.rec.RunsKept()
}

// A task whose remote worker died runs again on a new worker; once it
// ends, with a result or failed, the node forgets how often it ran.
func TestRetriedTaskForgetsItsRetries(t *testing.T) {
	for _, c := range []struct {
		name string
		runs int // how many workers run it: all but the last die
		end  func(t *testing.T, fw *fakeWorker, s *task.Spec)
	}{
		{"result", 2, func(t *testing.T, fw *fakeWorker, s *task.Spec) { fw.result(t, s, "done") }},
		{"every try died", 1 + recovery.DefaultRuns, func(t *testing.T, fw *fakeWorker, s *task.Spec) { fw.die() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newClusterHarness(t)
			if err := h.n.AddNode(1, "node 1", task.Resources{CPU: 1}); err != nil {
				t.Fatal(err)
			}
			s := h.submit(value("x"))
			for i := 1; i < c.runs; i++ {
				fw := h.worker()
				fw.exec(t)
				fw.die() // its node's connection dropped: the task runs again
			}
			fw := h.worker()
			c.end(t, fw, fw.exec(t))
			o := h.get(s.Return(0))
			if c.name == "result" && string(o.Data) != "done" {
				t.Fatalf("the retried task's result: %q (%v), want %q", o.Data, o.Err, "done")
			}
			if c.name != "result" && o.Err == nil {
				t.Fatalf("a task whose every worker died has a result %q, want its failure", o.Data)
			}
			if n := h.retried(); n != 0 {
				t.Fatalf("the node still counts the runs of %d ended tasks", n)
			}
		})
	}
}
