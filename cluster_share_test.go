package gray_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
	"github.com/gray-ml/gray/runtime/session"
)

// envHelperDriver makes TestHelperDriver run: the test binary started
// again as a second driver of a cluster.
const envHelperDriver = "GRAY_TEST_HELPER_DRIVER"

// TestHelperDriver is not a test on its own: run by
// TestClusterDriversShareANode, it connects to the cluster as a driver
// that wants 1 CPU, says so on its standard output and waits until its
// standard input ends.
func TestHelperDriver(t *testing.T) {
	if os.Getenv(envHelperDriver) == "" {
		t.Skip("run by TestClusterDriversShareANode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 1, ObjectStoreMemory: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	defer gray.Shutdown()
	fmt.Printf("ready CPU=%g\n", gray.ClusterResources()["CPU"])
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// Two drivers on the head's machine share its node: each takes a lease
// for what its own workers use, so together they never hold more than the
// node has, `gray status` shows both leases, and a driver's lease ends
// when the driver dies (kill -9).
func TestClusterDriversShareANode(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{CPUsPerNode: 2})
	head := c.Node(0).ID
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperDriver$")
	cmd.Env = append(c.Env(), session.EnvAddress+"=auto", envHelperDriver+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- sc.Text()
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if !ok || line != "ready CPU=1" {
			t.Fatalf("the other driver said %q, want ready with its 1 CPU", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("the other driver did not connect within a minute")
	}
	leased := func(cpu float64) func(clustertest.Status) bool {
		return func(st clustertest.Status) bool {
			n, _ := st.Node(head)
			return n.Leased.CPU == cpu
		}
	}
	c.WaitStatus(20*time.Second, "the other driver's lease of 1 CPU", leased(1))

	// This driver wants the node's 2 CPUs and gets the 1 left.
	initCluster(t, c)
	if got := gray.ClusterResources()["CPU"]; got != 1 {
		t.Fatalf("this driver has %g CPUs, want the 1 the other driver left", got)
	}
	c.WaitStatus(20*time.Second, "both leases, 2 CPUs of 2", leased(2))
	if got, err := gray.Get(context.Background(), whereSlow.Remote(1)); err != nil || got != head {
		t.Fatalf("a task ran on %q (%v), want the head %s", got, err, head)
	}

	// The other driver dies: its lease ends with it.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.WaitStatus(20*time.Second, "the dead driver's lease released", leased(1))
}
