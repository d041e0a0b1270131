package limits

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Each measure moves the sender's bytes (checked where they land in
// memory) and leaves no file behind.
func TestCopierMeasures(t *testing.T) {
	dir := t.TempDir()
	c, err := NewCopier(1<<20+123, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := make([]byte, 1<<20+123)
	for range 2 { // the connection is reused
		clear(dst)
		if _, err := c.TCP(dst); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, c.src) {
			t.Fatal("the bytes copied over TCP differ from the sender's")
		}
	}
	if _, err := c.TCP(make([]byte, 10)); err == nil {
		t.Fatal("TCP into a buffer too small: no error")
	}
	for name, measure := range map[string]func() (any, error){
		"TCPFreshShm":    func() (any, error) { return c.TCPFreshShm() },
		"MemcpyFreshShm": func() (any, error) { return c.MemcpyFreshShm() },
	} {
		if _, err := measure(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
			t.Fatalf("%s left %v", name, left)
		}
	}
	if _, err := c.TCP(dst); err != nil || !bytes.Equal(dst, c.src) {
		t.Fatalf("TCP after the fresh measures: %v, or the bytes differ", err)
	}
}

func TestCopierBadSize(t *testing.T) {
	if _, err := NewCopier(0, os.TempDir()); err == nil {
		t.Fatal("NewCopier(0): no error")
	}
}
