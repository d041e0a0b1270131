package driver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gray-ml/gray"
)

// rendezvous marks its arrival in dir and waits until want tasks have
// arrived: it returns only if that many run at the same time.
var rendezvous = gray.Func2("test.rendezvous", func(ctx context.Context, dir string, want int) (int, error) {
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(os.Getpid(), "-", time.Now().UnixNano())), nil, 0o644); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		es, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		if len(es) >= want {
			return os.Getpid(), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("only %d of %d tasks ran at once", len(es), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}, gray.CPUs(0.5))

// The pool grows to what the free resources allow ("the illusion of an
// infinite pool of workers"): four tasks of half a CPU each run at once
// on two CPUs.
func TestPoolGrowsToFreeResources(t *testing.T) {
	ctx := start(t, gray.Options{NumCPUs: 2})
	dir := t.TempDir()
	refs := make([]gray.Ref[int], 4)
	for i := range refs {
		refs[i] = rendezvous.Remote(dir, len(refs))
	}
	pids, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range pids {
		seen[p] = true
	}
	if len(seen) != 4 {
		t.Fatalf("the four tasks ran in %d processes, want 4", len(seen))
	}
}
