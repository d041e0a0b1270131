// Package fashionmnist loads the Fashion-MNIST dataset (Zalando's 70,000
// 28×28 grey-scale images of clothing in 10 classes, in MNIST's IDX format)
// and serves it for training: shuffling, minibatches and a train/validation
// split.
//
// Nothing is downloaded. Debian's package dataset-fashion-mnist installs
// the four files under DefaultDir, where Load looks when given no
// directory; any directory holding the same files (gzipped or not) works:
//
//	train, test, err := fashionmnist.Load("")   // DefaultDir
//	train, val := train.Split(55000)             // hold out 5,000 for validation
//	b := train.Batches(64, seed)
//	x, y := b.Next()                             // [64×784] pixels in [0, 1], labels
//
// Images stay as bytes (47 MB for the training set); Fill and Batches
// convert the rows they serve to float64 in caller-owned buffers.
package fashionmnist

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gray-ml/gray/datasets/idx"
)

// DefaultDir is where Debian's dataset-fashion-mnist package installs the
// files.
const DefaultDir = "/usr/share/datasets/fashion-mnist"

// Package is the Debian package that provides the dataset.
const Package = "dataset-fashion-mnist"

// Classes are the names of the ten labels, in label order.
var Classes = [10]string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// NumClasses is the number of labels.
const NumClasses = 10

// The files of one split, without the optional ".gz".
var files = map[string][2]string{
	"train": {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
	"test":  {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
}

// ErrNotInstalled is the cause of Load's error when the directory holds no
// dataset at all.
var ErrNotInstalled = errors.New("Fashion-MNIST is not installed")

// Set is a labelled set of images.
type Set struct {
	// Pixels holds Len() images of Rows×Cols bytes each, row-major.
	Pixels []uint8
	// Labels holds one class in [0, NumClasses) per image.
	Labels     []uint8
	Rows, Cols int
}

// Len is the number of images.
func (s *Set) Len() int { return len(s.Labels) }

// Features is the number of pixels per image.
func (s *Set) Features() int { return s.Rows * s.Cols }

// Load reads the training and test sets from dir ("" means DefaultDir).
func Load(dir string) (train, test *Set, err error) {
	if train, err = LoadSplit(dir, "train"); err != nil {
		return nil, nil, err
	}
	if test, err = LoadSplit(dir, "test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// LoadSplit reads one split, "train" or "test", from dir ("" means
// DefaultDir). Each file may be stored gzipped (name.gz) or not. Errors
// name the file and the problem; when dir holds none of the dataset's
// files the error wraps ErrNotInstalled and names the Debian package.
func LoadSplit(dir, split string) (*Set, error) { return LoadSplitN(dir, split, 0) }

// LoadSplitN is LoadSplit keeping only the first n images (all when
// n <= 0). It decompresses only what it keeps, so a short run on a few
// hundred images starts at once.
func LoadSplitN(dir, split string, n int) (*Set, error) {
	names, ok := files[split]
	if !ok {
		return nil, fmt.Errorf("fashionmnist: unknown split %q; use \"train\" or \"test\"", split)
	}
	if dir == "" {
		dir = DefaultDir
	}
	if !hasAny(dir) {
		return nil, fmt.Errorf("fashionmnist: %w in %s: install the Debian package %s (apt-get install %s) or give the directory that holds %s.gz: %w",
			ErrNotInstalled, dir, Package, Package, names[0], fs.ErrNotExist)
	}
	imgPath, err := find(dir, names[0])
	if err != nil {
		return nil, err
	}
	lblPath, err := find(dir, names[1])
	if err != nil {
		return nil, err
	}
	imgs, err := idx.ReadFileN(imgPath, n)
	if err != nil {
		return nil, fmt.Errorf("fashionmnist: %w", err)
	}
	if len(imgs.Dims) != 3 || imgs.Dims[1] == 0 || imgs.Dims[2] == 0 {
		return nil, fmt.Errorf("fashionmnist: %s: images must have 3 dimensions [count, rows, cols], the file has %v", imgPath, imgs.Dims)
	}
	lbls, err := idx.ReadFileN(lblPath, n)
	if err != nil {
		return nil, fmt.Errorf("fashionmnist: %w", err)
	}
	if len(lbls.Dims) != 1 {
		return nil, fmt.Errorf("fashionmnist: %s: labels must have 1 dimension [count], the file has %v", lblPath, lbls.Dims)
	}
	if imgs.Declared != lbls.Declared {
		return nil, fmt.Errorf("fashionmnist: %s holds %d images but %s holds %d labels; the files come from different sets or one is damaged",
			imgPath, imgs.Declared, lblPath, lbls.Declared)
	}
	for i, l := range lbls.Data {
		if l >= NumClasses {
			return nil, fmt.Errorf("fashionmnist: %s: label %d is %d, outside [0, %d)", lblPath, i, l, NumClasses)
		}
	}
	return &Set{Pixels: imgs.Data, Labels: lbls.Data, Rows: imgs.Dims[1], Cols: imgs.Dims[2]}, nil
}

// hasAny reports whether dir holds any of the dataset's files.
func hasAny(dir string) bool {
	for _, pair := range files {
		for _, n := range pair {
			for _, p := range []string{n, n + ".gz"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
					return true
				}
			}
		}
	}
	return false
}

// find returns the path of name or name.gz in dir.
func find(dir, name string) (string, error) {
	for _, p := range []string{name + ".gz", name} {
		path := filepath.Join(dir, p)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("fashionmnist: %s: file missing (neither %s nor %s.gz is there); reinstall %s or copy the file in: %w",
		dir, name, name, Package, fs.ErrNotExist)
}

// Subset returns a new set holding the images at idx, in that order.
func (s *Set) Subset(idx []int) *Set {
	f := s.Features()
	out := &Set{Pixels: make([]uint8, len(idx)*f), Labels: make([]uint8, len(idx)), Rows: s.Rows, Cols: s.Cols}
	for k, i := range idx {
		copy(out.Pixels[k*f:(k+1)*f], s.Pixels[i*f:(i+1)*f])
		out.Labels[k] = s.Labels[i]
	}
	return out
}

// Slice returns images [from, to) as a set sharing s's memory.
func (s *Set) Slice(from, to int) *Set {
	f := s.Features()
	return &Set{Pixels: s.Pixels[from*f : to*f : to*f], Labels: s.Labels[from:to:to], Rows: s.Rows, Cols: s.Cols}
}

// Split returns the first n images and the rest, sharing s's memory: a
// train/validation split. Shuffle first for a random split.
func (s *Set) Split(n int) (first, rest *Set) {
	n = min(max(n, 0), s.Len())
	return s.Slice(0, n), s.Slice(n, s.Len())
}

// Shuffled returns a copy of s in a random order drawn from seed.
func (s *Set) Shuffled(seed uint64) *Set {
	return s.Subset(rand.New(rand.NewPCG(seed, 0x5eed)).Perm(s.Len()))
}

// Shard returns part i of n nearly equal contiguous parts, sharing s's
// memory: the slice of the data one of n workers holds.
func (s *Set) Shard(i, n int) *Set {
	return s.Slice(i*s.Len()/n, (i+1)*s.Len()/n)
}

// Fill writes the images at idx into x as rows of Features() pixels scaled
// to [0, 1], and their labels into y (as float64, the way models.Tape's
// Gather takes class indices). x and y are grown when too small; the
// filled prefixes are returned.
func (s *Set) Fill(idx []int, x, y []float64) ([]float64, []float64) {
	f := s.Features()
	x, y = grow(x, len(idx)*f), grow(y, len(idx))
	for k, i := range idx {
		row := x[k*f : (k+1)*f]
		for j, p := range s.Pixels[i*f : (i+1)*f] {
			row[j] = float64(p) / 255
		}
		y[k] = float64(s.Labels[i])
	}
	return x, y
}

// FillRange is Fill for the images [from, to).
func (s *Set) FillRange(from, to int, x, y []float64) ([]float64, []float64) {
	f := s.Features()
	n := to - from
	x, y = grow(x, n*f), grow(y, n)
	for j, p := range s.Pixels[from*f : to*f] {
		x[j] = float64(p) / 255
	}
	for k, l := range s.Labels[from:to] {
		y[k] = float64(l)
	}
	return x, y
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// Batches serves shuffled minibatches epoch after epoch: every image once
// per epoch, in a new random order each epoch. It reuses its buffers, so
// what Next returns is valid until the next call.
type Batches struct {
	set   *Set
	size  int
	rng   *rand.Rand
	perm  []int
	pos   int
	epoch int
	x, y  []float64
}

// Batches returns minibatches of size images (at most Len()) shuffled with
// seed.
func (s *Set) Batches(size int, seed uint64) *Batches {
	size = min(max(size, 1), s.Len())
	return &Batches{set: s, size: size, rng: rand.New(rand.NewPCG(seed, 0xba7c4)), pos: s.Len()}
}

// Next returns the next minibatch: x [size×Features()] and y [size]. The
// last images of an epoch that do not fill a batch wait for the next
// epoch's shuffle, so every batch has the same size.
func (b *Batches) Next() (x, y []float64) {
	if b.pos+b.size > len(b.perm) {
		if b.perm == nil {
			b.perm = make([]int, b.set.Len())
			for i := range b.perm {
				b.perm[i] = i
			}
		} else {
			b.epoch++
		}
		b.rng.Shuffle(len(b.perm), func(i, j int) { b.perm[i], b.perm[j] = b.perm[j], b.perm[i] })
		b.pos = 0
	}
	idx := b.perm[b.pos : b.pos+b.size]
	b.pos += b.size
	b.x, b.y = b.set.Fill(idx, b.x, b.y)
	return b.x, b.y
}

// Epoch is the number of complete passes made so far.
func (b *Batches) Epoch() int { return b.epoch }

// Size is the batch size.
func (b *Batches) Size() int { return b.size }
