package clustertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
)

// A killed head is declared dead by the connection the other nodes hold
// to it, long before the node timeout (issue 27: detected within 2 s, also
// on a loaded machine): the timeout here is 30 s, so only the lost
// connection, confirmed by the head's silent heartbeat, can tell. The time
// is logged (benchmarks/README.md), never asserted.
func TestKilledHeadDeclaredDeadByItsLostConnection(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, NodeTimeout: 30 * time.Second})
	head, other := c.Node(0), c.Node(1)
	c.KillNode(0)
	killed := time.Now()
	st := c.WaitStatus(25*time.Second, "the other node to declare the killed head dead", func(st clustertest.Status) bool {
		h, ok := st.Node(head.ID)
		return ok && !h.Alive
	})
	detected := time.Since(killed)
	h, _ := st.Node(head.ID)
	if !strings.Contains(h.Death, "connection was lost") {
		t.Errorf("the head was declared dead %q, want by its lost connection", h.Death)
	}
	logged, err := os.ReadFile(filepath.Join(other.TempDir, "logs", "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "the head node "+head.ID+" is dead") || !strings.Contains(string(logged), "gray start --head") {
		t.Errorf("the node's log does not say the head died and what to do:\n%s", logged)
	}
	t.Logf("head killed: declared dead %v later (heartbeat 200 ms, node timeout 30 s): %s", detected.Round(time.Millisecond), h.Death)
}

// A head that is only slow (stopped with SIGSTOP: its heartbeats stop but
// its connections stay open) is not declared dead before the node
// timeout, however long past the lost-connection path's confirmation its
// silence lasts; once it runs again it carries on as the head.
func TestSlowHeadIsNotDeclaredDead(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, NodeTimeout: 30 * time.Second})
	head, other := c.Node(0), c.Node(1)
	pid := c.NodePID(0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	resume := func() {
		if stopped {
			stopped = false
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	// Silent for 2 s: ten heartbeat periods, five times what confirms a
	// head whose connection was lost.
	st := c.WaitStatus(20*time.Second, "the stopped head's heartbeat to be 2 s old", func(st clustertest.Status) bool {
		h, ok := st.Node(head.ID)
		return ok && (!h.Alive || time.Since(h.Heartbeat) > 2*time.Second)
	})
	if h, _ := st.Node(head.ID); !h.Alive {
		t.Fatalf("the stopped head was declared dead: %s", h.Death)
	}
	resume()
	resumed := time.Now()
	st = c.WaitStatus(20*time.Second, "the head to beat again", func(st clustertest.Status) bool {
		h, ok := st.Node(head.ID)
		return ok && (!h.Alive || h.Heartbeat.After(resumed))
	})
	if h, _ := st.Node(head.ID); !h.Alive {
		t.Fatalf("the slow head was declared dead: %s", h.Death)
	}
	logged, err := os.ReadFile(filepath.Join(other.TempDir, "logs", "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logged), "is dead") {
		t.Errorf("the other node's log says the slow head died:\n%s", logged)
	}
}
