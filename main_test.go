package gray_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// TestMain serves tasks when this test binary runs as a gray worker; the
// driver-side tests run otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("GRAY_TEST_NO_SERVE") == "" { // see TestMissingServeIfWorker
		gray.ServeIfWorker()
	}
	os.Exit(m.Run())
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
