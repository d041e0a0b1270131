package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedFileIsCurrent fails when remote_gen.go differs from what the
// generator writes now: run go generate in the module root and commit.
func TestCommittedFileIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "remote_gen.go")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		line := 1 + bytes.Count(want[:commonPrefix(got, want)], []byte("\n"))
		t.Fatalf("%s is stale (first difference on line %d): run `go generate .` in the module root and commit the result", path, line)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestEveryArityIsGenerated(t *testing.T) {
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"func Func0[", "func Func4x4[", "func Actor0[", "func Actor4[", "func Method0[", "func Method4["} {
		if !bytes.Contains(src, []byte(name)) {
			t.Errorf("generated code lacks %q", name)
		}
	}
}
