package plugins

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeGoExample is the Go environment plugin README.md walks through:
// the first ```go block after the heading of its section.
func readmeGoExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Writing a custom environment in Go")
	if i < 0 {
		t.Fatal("README.md has no section on writing an environment in Go")
	}
	s = s[i:]
	start := strings.Index(s, "```go\n")
	end := strings.Index(s[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README.md's Go environment section has no ```go block")
	}
	return s[start+6 : start+6+end]
}

// TestReadmePluginModuleBuilds follows plugins/README.md from an empty
// folder: a module of its own holding the README's example, pointed at
// this checkout with a workspace (go work), built, and stepped through the
// host; and with a replace directive, offline, its packages resolved.
func TestReadmePluginModuleBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin module")
	}
	gray, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	src := readmeGoExample(t)
	// The offline builds below need the go.mod of every module in Gray's
	// graph in the module cache, as a user's earlier build of Gray leaves
	// them. A fresh machine's cache holds only what its own builds
	// needed (a module imported only on Windows is missing), so list the
	// graph first, through the configured proxy.
	prime := exec.Command("go", "list", "-m", "all")
	prime.Dir = gray
	if out, err := prime.CombinedOutput(); err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	run := func(dir string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"GOPROXY=off", "GOFLAGS="}, env...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	module := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		run(dir, nil, "go", "mod", "init", "example.com/myenv")
		return dir
	}

	work := module()
	run(work, nil, "go", "work", "init", ".", gray)
	run(work, nil, "go", "build", "-o", "coin", ".")

	repl := module()
	run(repl, []string{"GOWORK=off"}, "go", "mod", "edit", "-require=github.com/gray-ml/gray@v0.0.0", "-replace=github.com/gray-ml/gray="+gray)
	sum, err := os.ReadFile(filepath.Join(gray, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repl, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	// Resolving every package is what the replace path can get wrong (a
	// missing checksum, the wrong path); compiling was done above.
	run(repl, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "go", "list", "-deps", ".")

	v, err := NewVector(context.Background(), filepath.Join(work, "coin"), nil, 2, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Reset([]int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := v.Step([][]float64{{0}, {1}}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}
