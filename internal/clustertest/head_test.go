package clustertest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray/internal/clustertest"
)

// A killed node, or a killed head, is declared dead by the connection
// the head (or every other node) holds to it, long before the node
// timeout (issue 27: a dead head detected within 2 s, also on a loaded
// machine): the timeout here is 30 s, so only the lost connection,
// confirmed by the silent heartbeat, can tell. The one that judged says
// so in its log. The times are logged (benchmarks/results/cluster.md), never
// asserted.
func TestKilledNodeDeclaredDeadByItsLostConnection(t *testing.T) {
	for _, tc := range []struct {
		name           string
		victim, judge  int
		says, thenWhat string
	}{
		{name: "head", victim: 0, judge: 1, says: "the head node %s is dead", thenWhat: "gray start --head"},
		{name: "node", victim: 1, judge: 0, says: "node %s declared dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, clustertest.Options{Nodes: 1, NodeTimeout: 30 * time.Second})
			victim, judge := c.Node(tc.victim), c.Node(tc.judge)
			c.KillNode(tc.victim)
			killed := time.Now()
			st := c.WaitStatus(25*time.Second, "the killed node declared dead", func(st clustertest.Status) bool {
				n, ok := st.Node(victim.ID)
				return ok && !n.Alive
			})
			n, _ := st.Node(victim.ID)
			if !strings.Contains(n.Death, "connection was lost") {
				t.Errorf("node %s was declared dead %q, want by its lost connection", victim.ID, n.Death)
			}
			logged, err := os.ReadFile(filepath.Join(judge.TempDir, "logs", "node.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(logged), fmt.Sprintf(tc.says, victim.ID)) || !strings.Contains(string(logged), tc.thenWhat) {
				t.Errorf("node %s's log does not say %q:\n%s", judge.ID, fmt.Sprintf(tc.says, victim.ID), logged)
			}
			t.Logf("%s killed: declared dead %v later (heartbeat 200 ms, node timeout 30 s): %s",
				tc.name, st.ReadAt.Sub(killed).Round(time.Millisecond), n.Death)
		})
	}
}

// A head or node that is only slow (stopped with SIGSTOP: its heartbeats
// stop but its connections stay open) is not declared dead before the
// node timeout, however long past the lost-connection path's confirmation
// its silence lasts; once it runs again it carries on.
func TestSlowNodeIsNotDeclaredDead(t *testing.T) {
	for _, tc := range []struct {
		name          string
		victim, judge int
	}{{"head", 0, 1}, {"node", 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, clustertest.Options{Nodes: 1, NodeTimeout: 30 * time.Second})
			slow, judge := c.Node(tc.victim), c.Node(tc.judge)
			pid := c.NodePID(tc.victim)
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
			// Silent for 2 s: ten heartbeat periods, five times what
			// confirms a node whose connection was lost.
			st := c.WaitStatus(20*time.Second, "the stopped node's heartbeat to be 2 s old", func(st clustertest.Status) bool {
				n, ok := st.Node(slow.ID)
				return ok && (!n.Alive || st.ReadAt.Sub(n.Heartbeat) > 2*time.Second)
			})
			if n, _ := st.Node(slow.ID); !n.Alive {
				t.Fatalf("the stopped node was declared dead: %s", n.Death)
			}
			resume()
			resumed := time.Now()
			st = c.WaitStatus(20*time.Second, "the node to beat again", func(st clustertest.Status) bool {
				n, ok := st.Node(slow.ID)
				return ok && (!n.Alive || n.Heartbeat.After(resumed))
			})
			if n, _ := st.Node(slow.ID); !n.Alive {
				t.Fatalf("the slow node was declared dead: %s", n.Death)
			}
			logged, err := os.ReadFile(filepath.Join(judge.TempDir, "logs", "node.log"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(logged), "dead") {
				t.Errorf("node %s's log says the slow node died:\n%s", judge.ID, logged)
			}
		})
	}
}
