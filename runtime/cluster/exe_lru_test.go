package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
)

// A node's executable cache keeps MaxCache bytes: when a new executable
// comes, the least recently used ones that no lease runs workers from are
// evicted; one in use stays even above the bound.
func TestExecutableCacheEvictsLeastRecentlyUsed(t *testing.T) {
	const size = 1 << 20
	nodeDir := t.TempDir()
	addr := startNodeConfig(t, NodeConfig{ID: "n1", TempDir: nodeDir, Resources: task.Resources{CPU: 2}, MaxCache: 2*size + size/2})
	info := control.NodeInfo{ID: "n1", NodeAddr: addr, Resources: task.Resources{CPU: 2}}
	type program struct{ path, sum string }
	var progs []program
	for i := range 3 {
		path, body := writeExe(t, t.TempDir(), size+i)
		sum := sha256.Sum256(body)
		progs = append(progs, program{path, hex.EncodeToString(sum[:])})
	}
	a, b, c := progs[0], progs[1], progs[2]
	join := func(p program) *Driver {
		t.Helper()
		d, err := NewDriver(DriverConfig{Token: token, Job: "job-" + p.sum[:8], Executable: p.path})
		if err != nil {
			t.Fatal(err)
		}
		d.Attach(newScheduler())
		t.Cleanup(func() { d.Close() })
		if err := d.Join(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// waitCache waits until the cache holds exactly want (the node ends a
	// lease, and releases its executable, after the driver closes).
	waitCache := func(what string, want ...program) {
		t.Helper()
		var names []string
		for _, p := range want {
			names = append(names, p.sum)
		}
		slices.Sort(names)
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := cacheFiles(t, nodeDir)
			slices.Sort(got)
			if slices.Equal(got, names) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the cache holds %v, want %v", what, got, names)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	da := join(a)
	db := join(b)
	dc := join(c) // three in use, over the bound: none is evicted
	waitCache("three in use", a, b, c)
	da.Close() // a, used first and now by nobody, goes
	waitCache("a released", b, c)
	db.Close()
	dc.Close()
	// b used again, then a comes back: c, used longest ago, goes (once
	// its lease has ended, if it had not yet).
	db = join(b)
	join(a)
	waitCache("a back", a, b)
	db.Close()
}

// Eviction goes by last use (the files' modification times), skips what is
// in use and files that are not a sum's name, and stops under the bound.
func TestExecutableCacheEvictionOrder(t *testing.T) {
	dir := t.TempDir()
	c, err := newExeCache(dir, token, 250)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	base := time.Now().Add(-time.Hour)
	var sums [][32]byte
	for i := range 4 {
		sum := sha256.Sum256([]byte{byte(i)})
		sums = append(sums, sum)
		p := c.blobs.Path(sum)
		if err := os.WriteFile(p, make([]byte, 100), 0o700); err != nil {
			t.Fatal(err)
		}
		used := base.Add(time.Duration([]int{3, 1, 0, 2}[i]) * time.Minute) // use order: 2, 1, 3, 0
		if err := os.Chtimes(p, used, used); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pull-123.tmp"), make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	c.inUse[sums[2]] = 1 // the oldest, but in use
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	// 400 bytes over a bound of 250: 1 then 3 go (2 is in use), leaving 200.
	for i, want := range []bool{true, false, true, false} {
		if got := c.blobs.Has(sums[i]); got != want {
			t.Errorf("executable %d cached: %v, want %v", i, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pull-123.tmp")); err != nil {
		t.Errorf("a pull's temporary file was removed: %v", err)
	}
}
