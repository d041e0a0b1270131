package driver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

var pidOf = gray.Func0("test.pidOf", func(ctx context.Context) (int, error) {
	return os.Getpid(), nil
})

// pidMet returns its worker's pid once n calls of it have started, each
// marking dir with its pid: n calls submitted at once end only when each
// runs on a worker of its own (none can end before the others start), so
// their pids are n distinct workers. Calls that cannot all start at once
// fail after 30 s, naming how many did.
var pidMet = gray.Func2("test.pidMet", func(ctx context.Context, dir string, n int) (int, error) {
	pid := os.Getpid()
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), nil, 0o644); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		marks, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		if len(marks) >= n {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("only %d of %d calls started on workers of their own: %w", len(marks), n, ctx.Err())
		case <-time.After(time.Millisecond): // look again: the marks are files
		}
	}
})

// pidsOfTwoWorkers returns the pids of the two workers that ran two
// pidMet calls at once.
func pidsOfTwoWorkers(ctx context.Context) ([]int, error) {
	dir, err := os.MkdirTemp("", "gray-met-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return gray.GetAll(ctx, []gray.Ref[int]{pidMet.Remote(dir, 2), pidMet.Remote(dir, 2)})
}

var sleepy = gray.Func1("test.sleepy", func(ctx context.Context, pidFile string) (int, error) {
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return 0, err
	}
	time.Sleep(30 * time.Second)
	return 0, nil
})

// A worker killed in the middle of a task fails that task with
// ErrWorkerDied, naming the function, the worker and the signal, and the
// pool goes on running tasks.
func TestWorkerKilledMidTask(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := sleepy.Remote(pidFile)
	pid := readPID(t, pidFile)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err := gray.Get(ctx, r)
	var te *gray.TaskError
	if !errors.As(err, &te) || !errors.Is(err, gray.ErrWorkerDied) || te.Function != "test.sleepy" || !strings.Contains(te.Worker, strconv.Itoa(pid)) || !strings.Contains(te.Message, "killed") {
		t.Fatalf("Get after the worker was killed: %v", err)
	}
	if v, err := gray.Get(ctx, itInc.Remote(41)); err != nil || v != 42 {
		t.Fatalf("after the kill: %v, %v", v, err)
	}
}

// Many parents on few CPUs: parents are queued behind busy workers and
// must be handed back when one blocks on its children.
func TestNestedBacklog(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	parents := make([]gray.Ref[int], 40)
	for i := range parents {
		parents[i] = lFanOut.Remote(10 + i%3)
	}
	got, err := gray.GetAll(ctx, parents)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if want := sumSquares(10 + i%3); v != want {
			t.Fatalf("parent %d = %d, want %d", i, v, want)
		}
	}
}

// startHelperDriver starts this test binary again with args and env set
// to 1 (the helper driver's role, which the test it runs checks), after
// setup has adjusted the command, and returns it with a scanner of its
// standard output.
func startHelperDriver(t *testing.T, ctx context.Context, env string, setup func(*exec.Cmd), args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env+"=1")
	if setup != nil {
		setup(cmd)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

// TestNoOrphans kills a driver with SIGKILL and checks its workers go too.
func TestNoOrphans(t *testing.T) {
	if os.Getenv("GRAY_TEST_ORPHAN_DRIVER") != "" {
		t.Skip("running as the helper driver")
	}
	cmd, sc := startHelperDriver(t, context.Background(), "GRAY_TEST_ORPHAN_DRIVER", nil, "-test.run=^TestOrphanDriver$")
	var pids []int
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "worker pid "); ok {
			n, _ := strconv.Atoi(p)
			pids = append(pids, n)
			if len(pids) == 2 {
				break
			}
		}
	}
	if len(pids) != 2 {
		_ = cmd.Process.Kill()
		t.Fatalf("the helper driver reported worker pids %v", pids)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for _, p := range pids {
		waitGone(t, p, "its driver was killed")
	}
}

// TestOrphanDriver is the driver TestNoOrphans kills.
func TestOrphanDriver(t *testing.T) {
	if os.Getenv("GRAY_TEST_ORPHAN_DRIVER") == "" {
		t.Skip("only run by TestNoOrphans")
	}
	ctx := context.Background()
	if err := gray.Init(ctx, gray.Options{NumCPUs: 2, NoGPUs: true}); err != nil {
		t.Fatal(err)
	}
	// Two calls that meet run on the two pool workers.
	pids, err := pidsOfTwoWorkers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		fmt.Printf("worker pid %d\n", p)
	}
	time.Sleep(time.Minute)
}
