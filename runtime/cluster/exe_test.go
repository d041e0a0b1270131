package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
)

// writeExe writes a shell script of about size bytes that exits 0.
func writeExe(t *testing.T, dir string, size int) (string, []byte) {
	t.Helper()
	body := []byte("#!/bin/sh\nexit 0\n#" + strings.Repeat("x", size) + "\n")
	path := filepath.Join(dir, "prog")
	if err := os.WriteFile(path, body, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, body
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "exe"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Two drivers of the same executable lease a node at once: the node pulls
// it once (from one driver; the other's lease waits for that pull), caches
// it under its sha256 with mode 0700, and runs workers of both from it.
func TestExecutablePulledOnceForTwoDrivers(t *testing.T) {
	nodeDir := t.TempDir()
	addr := startNodeIn(t, "n1", task.Resources{CPU: 2}, nodeDir)
	exe, body := writeExe(t, t.TempDir(), 3<<20)
	info := control.NodeInfo{ID: "n1", NodeAddr: addr, Resources: task.Resources{CPU: 2}}
	var drivers []*Driver
	for _, job := range []string{"job1", "job2"} {
		d, err := NewDriver(DriverConfig{Token: token, Job: job, Executable: exe})
		if err != nil {
			t.Fatal(err)
		}
		d.Attach(newScheduler())
		t.Cleanup(func() { d.Close() })
		drivers = append(drivers, d)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(drivers))
	for i, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.Join(context.Background(), info)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("driver %d: %v", i+1, err)
		}
	}
	if got := drivers[0].ExeServed() + drivers[1].ExeServed(); got != int64(len(body)) {
		t.Errorf("the drivers served %d bytes of their %d-byte executable: the node pulled it %g times, want once", got, len(body), float64(got)/float64(len(body)))
	}
	sum := sha256.Sum256(body)
	if got := cacheFiles(t, nodeDir); !slices.Equal(got, []string{hex.EncodeToString(sum[:])}) {
		t.Fatalf("the node's cache holds %v, want the executable under its sha256", got)
	}
	fi, err := os.Stat(filepath.Join(nodeDir, "exe", hex.EncodeToString(sum[:])))
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Size() != int64(len(body)) {
		t.Fatalf("cached executable: %v, %v", fi, err)
	}

	// A third lease of the same executable finds it cached.
	d3, err := NewDriver(DriverConfig{Token: token, Job: "job3", Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	d3.Attach(newScheduler())
	t.Cleanup(func() { d3.Close() })
	if err := d3.Join(context.Background(), info); err != nil {
		t.Fatal(err)
	}
	if got := d3.ExeServed(); got != 0 {
		t.Errorf("a third driver served %d bytes: the node pulled a cached executable again", got)
	}
}

// An executable that arrives other than its sha256 says (changed on the
// driver's disk after it was hashed, or cut short) is refused with a clear
// error, and nothing of it stays in the node's cache.
func TestExecutableThatDoesNotMatchItsSumIsRefused(t *testing.T) {
	tests := []struct {
		name   string
		change func(body []byte) []byte
	}{
		{"corrupted", func(b []byte) []byte {
			c := slices.Clone(b)
			c[len(c)/2] ^= 0xff
			return c
		}},
		{"short", func(b []byte) []byte { return b[:len(b)/3] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodeDir := t.TempDir()
			addr := startNodeIn(t, "n1", task.Resources{CPU: 1}, nodeDir)
			exe, body := writeExe(t, t.TempDir(), 1<<20)
			d, err := NewDriver(DriverConfig{Token: token, Job: "job", Executable: exe})
			if err != nil {
				t.Fatal(err)
			}
			d.Attach(newScheduler())
			t.Cleanup(func() { d.Close() })
			if err := os.WriteFile(exe, tc.change(body), 0o755); err != nil {
				t.Fatal(err)
			}
			err = d.Join(context.Background(), control.NodeInfo{ID: "n1", NodeAddr: addr, Resources: task.Resources{CPU: 1}})
			if err == nil || !strings.Contains(err.Error(), "could not pull the driver's executable") || !strings.Contains(err.Error(), "corrupted in transit") {
				t.Fatalf("join with a %s executable: %v, want a refusal saying it did not match its sum", tc.name, err)
			}
			if got := cacheFiles(t, nodeDir); len(got) != 0 {
				t.Fatalf("the node's cache holds %v after a refused executable, want nothing", got)
			}
		})
	}
}
