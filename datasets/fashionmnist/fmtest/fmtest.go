// Package fmtest gives tests Fashion-MNIST data that is always there: the
// installed dataset when Debian's package is present, otherwise a small
// synthetic one in the same format.
package fmtest

import (
	"testing"

	"github.com/gray-ml/gray/datasets/fashionmnist"
)

// Dir returns the folder to load from: "" (the installed dataset) when
// fashionmnist.Installed, else a temporary folder holding nTrain training
// and nTest test images written by fashionmnist.WriteSynthetic.
func Dir(t testing.TB, nTrain, nTest int) string {
	t.Helper()
	if fashionmnist.Installed("") {
		return ""
	}
	dir := t.TempDir()
	if err := fashionmnist.WriteSynthetic(dir, nTrain, nTest, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s not installed: using synthetic data", fashionmnist.Package)
	return dir
}
