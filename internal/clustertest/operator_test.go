package clustertest_test

import (
	"os/exec"
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
