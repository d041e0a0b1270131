// Package layering holds the test that keeps the module's import
// directions: a package must not import a package above it, or reach past
// an API into another layer's internals.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gray-ml/gray/"

// TestImportDirections checks, with `go list`, that no package imports one
// it must not: the RL platform's parts stay apart from the
// runtime's internals, and the logging and search layers from the
// algorithms. A rule marked deep holds for everything the package builds
// on, not only its own imports.
func TestImportDirections(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	rules := []struct {
		pkg, mustNot, why string
		deep              bool
	}{
		{"platform/runlog", "rllib", "the logger writes any result; runner turns an rllib.Result into one", false},
		{"tune", "runtime/cluster", "tune uses the gray API (gray.NodeID), not the cluster's internals", false},
		{"rllib", "runtime/codec", "checkpoints are a file format of their own, not the runtime's wire format", false},
		{"rllib/sample", "rllib", "sub-packages are below the scaffold that uses them", false},
		{"rllib/schedule", "rllib", "sub-packages are below the scaffold that uses them", false},
		{"models", "envs", "the catalog reads shapes from package spaces, below both", true},
		{"spaces", "envs", "envs builds on spaces, not the other way round", true},
		{"", "runtime/control", "the root package is the API: the cluster's control store is runtime/driver's", false},
		{"", "runtime/session", "the root package is the API: finding a cluster is runtime/driver's", false},
		{"", "runtime/node", "the root package is the API: the Inspector names runtime/state's types, not the node's", false},
		{"runtime/node", "runtime/driver", "the driver composes the node, not the other way round", true},
		{"runtime/cluster", "runtime/driver", "the driver composes the cluster's leases, not the other way round", true},
	}
	for _, r := range rules {
		field := "Imports"
		if r.deep {
			field = "Deps"
		}
		pkg := strings.TrimSuffix(module+r.pkg, "/") // "": the module root
		out, err := exec.Command("go", "list", "-f", `{{join .`+field+` " "}}`, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, imp := range strings.Fields(string(out)) {
			if imp == module+r.mustNot {
				t.Errorf("%s imports %s: it must not (%s)", pkg, r.mustNot, r.why)
			}
		}
	}
}
