package fashionmnist

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/datasets/idx"
)

func TestLoadSynthetic(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSynthetic(dir, 50, 20, 1); err != nil {
		t.Fatal(err)
	}
	if !Installed(dir) {
		t.Fatal("Installed = false after WriteSynthetic")
	}
	train, test, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 50 || test.Len() != 20 || train.Rows != 28 || train.Features() != 784 {
		t.Fatalf("got %d/%d images of %dx%d", train.Len(), test.Len(), train.Rows, train.Cols)
	}
	a, b := train.Split(40)
	if a.Len() != 40 || b.Len() != 10 || b.Labels[0] != train.Labels[40] {
		t.Fatalf("Split(40) = %d + %d", a.Len(), b.Len())
	}
	if s := train.Shard(2, 3); s.Len() != 17 || s.Labels[0] != train.Labels[33] {
		t.Fatalf("Shard(2, 3) has %d images", s.Len())
	}
	x, y := train.Fill([]int{3, 0}, nil, nil)
	if len(x) != 2*784 || y[0] != float64(train.Labels[3]) || x[784] != float64(train.Pixels[0])/255 {
		t.Fatal("Fill put the wrong image or label")
	}
	x2, _ := train.FillRange(0, 1, nil, nil)
	if !slices.Equal(x2, x[784:]) {
		t.Fatal("FillRange(0, 1) differs from Fill([0])")
	}
}

func TestBatchesCoverEveryImageEachEpoch(t *testing.T) {
	s := &Set{Rows: 1, Cols: 1, Labels: make([]uint8, 10), Pixels: make([]uint8, 10)}
	for i := range s.Labels {
		s.Pixels[i] = uint8(i)
		s.Labels[i] = uint8(i)
	}
	b := s.Batches(3, 7)
	for epoch := 0; epoch < 3; epoch++ {
		seen := map[float64]bool{}
		for k := 0; k < 3; k++ {
			_, y := b.Next()
			for _, v := range y {
				if seen[v] {
					t.Fatalf("epoch %d served label %v twice", epoch, v)
				}
				seen[v] = true
			}
		}
		if len(seen) != 9 || b.Epoch() != epoch {
			t.Fatalf("epoch %d: %d distinct images, Epoch() = %d", epoch, len(seen), b.Epoch())
		}
	}
	sh := s.Shuffled(3)
	got := slices.Clone(sh.Labels)
	slices.Sort(got)
	if !slices.Equal(got, s.Labels) || slices.Equal(sh.Labels, s.Labels) {
		t.Fatalf("Shuffled labels %v are not a shuffle of %v", sh.Labels, s.Labels)
	}
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, dir, name string, a *idx.Array) {
		t.Helper()
		if err := idx.WriteFile(filepath.Join(dir, name), a, strings.HasSuffix(name, ".gz")); err != nil {
			t.Fatal(err)
		}
	}
	imgs := func(n int) *idx.Array { return &idx.Array{Dims: []int{n, 2, 2}, Data: make([]uint8, 4*n)} }
	lbls := func(n int) *idx.Array { return &idx.Array{Dims: []int{n}, Data: make([]uint8, n)} }
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"empty dir", func(t *testing.T, dir string) {}, []string{"not installed", Package}},
		{"labels missing", func(t *testing.T, dir string) { write(t, dir, "train-images-idx3-ubyte.gz", imgs(3)) },
			[]string{"train-labels-idx1-ubyte", "file missing"}},
		{"count mismatch", func(t *testing.T, dir string) {
			write(t, dir, "train-images-idx3-ubyte", imgs(3))
			write(t, dir, "train-labels-idx1-ubyte.gz", lbls(4))
		}, []string{"holds 3 images but", "train-labels-idx1-ubyte.gz holds 4 labels"}},
		{"images not 3-D", func(t *testing.T, dir string) {
			write(t, dir, "train-images-idx3-ubyte", lbls(3))
			write(t, dir, "train-labels-idx1-ubyte", lbls(3))
		}, []string{"train-images-idx3-ubyte", "3 dimensions"}},
		{"bad label", func(t *testing.T, dir string) {
			write(t, dir, "train-images-idx3-ubyte", imgs(2))
			write(t, dir, "train-labels-idx1-ubyte", &idx.Array{Dims: []int{2}, Data: []uint8{1, 12}})
		}, []string{"label 1 is 12"}},
		{"truncated", func(t *testing.T, dir string) {
			write(t, dir, "train-images-idx3-ubyte", imgs(3))
			write(t, dir, "train-labels-idx1-ubyte", lbls(3))
			p := filepath.Join(dir, "train-images-idx3-ubyte")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-1], 0o644)
		}, []string{"train-images-idx3-ubyte", "truncated"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			_, err := LoadSplit(dir, "train")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadSplit(filepath.Join(t.TempDir(), "nope"), "train"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("missing dir: %v does not wrap ErrNotInstalled", err)
	}
	if _, err := LoadSplit(t.TempDir(), "validation"); err == nil || !strings.Contains(err.Error(), "unknown split") {
		t.Errorf("bad split: %v", err)
	}
}

// TestLoadInstalled reads the real dataset when the Debian package is
// installed (make deps installs it).
func TestLoadInstalled(t *testing.T) {
	if !Installed("") {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed in CI; make deps installs it", Package)
		}
		t.Skipf("%s not installed (apt-get install %s)", Package, Package)
	}
	if raceEnabled {
		// Decompressing 30 MB under the race detector takes minutes.
		train, err := LoadSplitN("", "train", 500)
		if err != nil || train.Len() != 500 || train.Rows != 28 || train.Cols != 28 {
			t.Fatalf("first 500 training images: %v, %v", train, err)
		}
		return
	}
	train, test, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 60000 || test.Len() != 10000 || train.Rows != 28 || train.Cols != 28 {
		t.Fatalf("got %d and %d images of %dx%d", train.Len(), test.Len(), train.Rows, train.Cols)
	}
	var counts [NumClasses]int
	for _, l := range test.Labels {
		counts[l]++
	}
	for c, n := range counts {
		if n != 1000 {
			t.Errorf("test class %d (%s) has %d images, want 1000", c, Classes[c], n)
		}
	}
}

func TestLoadSplitN(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSynthetic(dir, 30, 10, 2); err != nil {
		t.Fatal(err)
	}
	all, err := LoadSplit(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	some, err := LoadSplitN(dir, "train", 7)
	if err != nil {
		t.Fatal(err)
	}
	if some.Len() != 7 || !slices.Equal(some.Labels, all.Labels[:7]) || !slices.Equal(some.Pixels, all.Pixels[:7*784]) {
		t.Fatalf("LoadSplitN(7) gave %d images, not the first 7", some.Len())
	}
}
