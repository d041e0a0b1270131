package gray_test

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

var pidSlow = gray.Func0("test.pidSlow", func(ctx context.Context) (int, error) {
	time.Sleep(300 * time.Millisecond)
	return os.Getpid(), nil
})

var sleepy = gray.Func1("test.sleepy", func(ctx context.Context, pidFile string) (int, error) {
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return 0, err
	}
	time.Sleep(30 * time.Second)
	return 0, nil
})

func TestWorkerKilledMidTask(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := sleepy.Remote(pidFile)
	var pid int
	deadline := time.Now().Add(10 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err := gray.Get(ctx, r)
	var te *gray.TaskError
	if !errors.As(err, &te) || !errors.Is(err, gray.ErrWorkerDied) || te.Function != "test.sleepy" || !strings.Contains(te.Worker, strconv.Itoa(pid)) || !strings.Contains(te.Message, "killed") {
		t.Fatalf("Get after the worker was killed: %v", err)
	}
	if v, err := gray.Get(ctx, inc.Remote(41)); err != nil || v != 42 {
		t.Fatalf("after the kill: %v, %v", v, err)
	}
}

func TestNestedBacklog(t *testing.T) {
	// Many parents on few CPUs: parents are queued behind busy workers and
	// must be handed back when one blocks on its children.
	ctx := start(t, gray.Options{NumCPUs: 2})
	var results []gray.Ref[int]
	for i := range 40 {
		results = append(results, runExperiment.Remote(i))
	}
	got, err := gray.GetAll(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 10*i+45 {
			t.Fatalf("experiment %d = %d, want %d", i, v, 10*i+45)
		}
	}
}

// TestNoOrphans kills a driver with SIGKILL and checks its workers go too.
func TestNoOrphans(t *testing.T) {
	if os.Getenv("GRAY_TEST_ORPHAN_DRIVER") != "" {
		t.Skip("running as the helper driver")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestOrphanDriver$")
	cmd.Env = append(os.Environ(), "GRAY_TEST_ORPHAN_DRIVER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
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
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); strings.Contains(string(b), ") Z ") {
				break // a zombie awaiting its reaper is gone for our purposes
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker %d outlived its driver", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
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
	// Two slow calls at once land on the two pool workers.
	pids, err := gray.GetAll(ctx, []gray.Ref[int]{pidSlow.Remote(), pidSlow.Remote()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		fmt.Printf("worker pid %d\n", p)
	}
	time.Sleep(time.Minute)
}

// TestMissingServeIfWorker runs a driver whose workers do not call
// ServeIfWorker: Init must fail with an error saying so, not hang.
func TestMissingServeIfWorker(t *testing.T) {
	if os.Getenv("GRAY_TEST_NO_SERVE") != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := gray.Init(ctx, gray.Options{NumCPUs: 1, NoGPUs: true})
		if err == nil {
			_ = gray.Shutdown()
			t.Fatal("Init succeeded with workers that cannot serve")
		}
		t.Log(err)
		if !strings.Contains(err.Error(), "ServeIfWorker") {
			t.Fatalf("Init error does not name the fix: %v", err)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestMissingServeIfWorker$", "-test.v")
	cmd.Env = append(os.Environ(), "GRAY_TEST_NO_SERVE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("helper driver: %v\n%s", err, out)
	}
}
