package clustertest_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/session"
)

// An operator on another machine (no session of the cluster there) names
// the cluster with GRAY_ADDRESS and GRAY_TOKEN, as `gray start --head`
// tells drivers to: `gray status` and `gray list` read it from there, as
// their --address help says, instead of looking for a head on this
// machine ("no Gray cluster runs on this machine").
func TestStatusAndListTakeTheAddressFromTheEnvironment(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	elsewhere := []string{
		session.EnvIndexDir + "=" + t.TempDir(), // no session of this cluster here
		session.EnvAddress + "=" + c.Address(),
		session.EnvToken + "=" + c.Token(),
	}
	for _, args := range [][]string{{"status"}, {"list", "nodes"}} {
		cmd := exec.Command(clustertest.BuildGray(t), args...)
		cmd.Env = append(cmd.Environ(), elsewhere...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.Node(0).ID) {
			t.Errorf("gray %s with GRAY_ADDRESS on another machine: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// A standby head started while the cluster's head still runs (started
// early, or on the wrong machine) is refused with the way out: it took
// over, and the cluster had two heads, both monitoring and pruning it.
func TestStandbyHeadRefusesALiveHead(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	out, err := c.Gray("start", "--head", "--redis-address", c.Address(), "--token-file", c.TokenFile(),
		"--temp-dir", filepath.Join(t.TempDir(), "standby"), "--node-ip-address", "127.0.0.9", "--num-cpus", "1")
	if err == nil || !strings.Contains(out, "head "+c.Node(0).ID) || !strings.Contains(out, "is alive") {
		t.Fatalf("a standby head beside a live head: %v\n%s", err, out)
	}
}

// `gray stop` after a node was killed counts the nodes it stopped, and
// says how many had died already, rather than counting those as stopped.
func TestStopSaysWhichNodesHadDied(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	c.KillNode(1)
	if out, err := c.Gray("stop"); err != nil || !strings.Contains(out, "Stopped 1 node. 1 more had died already.") {
		t.Errorf("gray stop (the head ran, the node was killed): %v\n%s", err, out)
	}
}
