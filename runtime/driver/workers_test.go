package driver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/clustertest"
)

// liveChildren returns the pids of this process's children that are alive
// (not zombies): its worker processes.
func liveChildren(t *testing.T) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	var pids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/stat"))
			pids = append(pids, pid)
		}
	}
	return pids
}

var pidParent = gray.Func0("test.pidParent", func(ctx context.Context) ([2]int, error) {
	child, err := gray.Get(ctx, pidOf.Remote())
	return [2]int{os.Getpid(), child}, err
})

// Workers started to cover parents blocked in Get (so nested tasks cannot
// deadlock) are reaped once idle: the pool returns to its size.
func TestIdleSpareWorkersAreReaped(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	ctx := start(t, gray.Options{NumCPUs: 1})
	if _, err := gray.Get(ctx, pidOf.Remote()); err != nil { // the pool is up
		t.Fatal(err)
	}
	base := len(liveChildren(t))
	if base != 1 {
		t.Fatalf("%d workers with 1 CPU, want 1", base)
	}
	// The parent blocks in Get on its child; with one CPU and one
	// worker, the child must run on a spare started for it.
	got, err := gray.Get(ctx, pidParent.Remote())
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == got[1] {
		t.Fatalf("parent and child ran in the same process %d, want a spare worker", got[0])
	}
	clustertest.WaitFor(t, 10*time.Second, "the idle spare workers to be reaped", func() bool { return len(liveChildren(t)) <= base })
}

// A Ctrl-C at the terminal reaches the driver's whole process group. The
// workers ignore it: the driver decides, here by running more tasks on the
// same workers and then shutting them down.
func TestWorkersIgnoreSIGINT(t *testing.T) {
	if os.Getenv("GRAY_TEST_SIGINT_DRIVER") != "" {
		t.Skip("running as the helper driver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, sc := startHelperDriver(t, ctx, "GRAY_TEST_SIGINT_DRIVER", func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a shell job
	}, "-test.run=^TestSIGINTDriver$", "-test.v")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := map[string]string{}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		lines[k] = v
		if k == "before" {
			// Ctrl-C: SIGINT to every process of the group.
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
		if k == "after" || k == "error" {
			break
		}
	}
	if e := lines["error"]; e != "" {
		t.Fatalf("helper driver: %s", e)
	}
	if lines["before"] == "" || lines["after"] != lines["before"] {
		t.Fatalf("workers before SIGINT %q, after %q: want the same live workers", lines["before"], lines["after"])
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper driver: %v", err)
	}
	for _, f := range strings.Fields(lines["before"]) {
		pid, _ := strconv.Atoi(f)
		waitGone(t, pid, "its driver's Shutdown")
	}
}

// waitGone waits until process pid has exited (a zombie awaiting its
// reaper counts as gone) and fails the test if it is still alive 10 s
// after the event named by after.
func waitGone(t *testing.T, pid int, after string) {
	t.Helper()
	clustertest.WaitFor(t, 10*time.Second, fmt.Sprintf("worker %d to exit after %s", pid, after), func() bool {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return strings.Contains(string(b), ") Z ")
	})
}

// TestSIGINTDriver is the driver TestWorkersIgnoreSIGINT interrupts.
func TestSIGINTDriver(t *testing.T) {
	if os.Getenv("GRAY_TEST_SIGINT_DRIVER") == "" {
		t.Skip("only run by TestWorkersIgnoreSIGINT")
	}
	fail := func(err error) {
		fmt.Printf("error: %v\n", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		fail(err)
	}
	pids := func() string {
		got, err := pidsOfTwoWorkers(ctx)
		if err != nil {
			fail(err)
		}
		if got[0] > got[1] {
			got[0], got[1] = got[1], got[0]
		}
		return fmt.Sprintf("%d %d", got[0], got[1])
	}
	before := pids()
	fmt.Printf("before: %s\n", before)
	select {
	case <-sigs:
	case <-time.After(30 * time.Second):
		fail(fmt.Errorf("no SIGINT came"))
	}
	// The signal reached the workers when the parent sent it, before it
	// reached this process: a worker it killed would run no task after
	// it, so two tasks on the same two workers show that both ignored it
	// (a killed one would have been replaced by a worker of another pid).
	fmt.Printf("after: %s\n", pids())
	if err := gray.Shutdown(); err != nil {
		fail(err)
	}
}
