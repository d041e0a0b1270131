package fashionmnist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gray-ml/gray/datasets/idx"
)

// Installed reports whether dir ("" means DefaultDir) holds the dataset's
// training and test files.
func Installed(dir string) bool {
	if dir == "" {
		dir = DefaultDir
	}
	for _, pair := range files {
		for _, n := range pair {
			if _, err := find(dir, n); err != nil {
				return false
			}
		}
	}
	return true
}

// WriteSynthetic writes a small stand-in for the dataset into dir, in the
// same files and format (gzipped): nTrain and nTest 28×28 images whose
// class is a noisy, randomly shifted copy of one of ten fixed random
// blob patterns. It is learnable but not trivially so, for tests and
// demos on machines without the Debian package.
func WriteSynthetic(dir string, nTrain, nTest int, seed uint64) error {
	const side = 28
	rng := rand.New(rand.NewPCG(seed, 0x5717))
	var protos [NumClasses][side * side]float64
	for c := range protos {
		for b := 0; b < 4; b++ { // four Gaussian blobs per class
			cy, cx, r := 6+rng.Float64()*16, 6+rng.Float64()*16, 2+rng.Float64()*3
			for y := 0; y < side; y++ {
				for x := 0; x < side; x++ {
					d := (float64(y)-cy)*(float64(y)-cy) + (float64(x)-cx)*(float64(x)-cx)
					protos[c][y*side+x] += 0.8 * math.Exp(-d/(2*r*r))
				}
			}
		}
	}
	write := func(split string, n int) error {
		pix := make([]uint8, n*side*side)
		lbl := make([]uint8, n)
		for i := 0; i < n; i++ {
			c := rng.IntN(NumClasses)
			lbl[i] = uint8(c)
			dy, dx := rng.IntN(5)-2, rng.IntN(5)-2
			for y := 0; y < side; y++ {
				for x := 0; x < side; x++ {
					v := 0.25 * rng.Float64()
					if sy, sx := y-dy, x-dx; sy >= 0 && sy < side && sx >= 0 && sx < side {
						v += protos[c][sy*side+sx]
					}
					pix[i*side*side+y*side+x] = uint8(255 * min(v, 1))
				}
			}
		}
		names := files[split]
		if err := idx.WriteFile(filepath.Join(dir, names[0]+".gz"), &idx.Array{Dims: []int{n, side, side}, Data: pix}, true); err != nil {
			return fmt.Errorf("fashionmnist: writing synthetic %s images: %w", split, err)
		}
		if err := idx.WriteFile(filepath.Join(dir, names[1]+".gz"), &idx.Array{Dims: []int{n}, Data: lbl}, true); err != nil {
			return fmt.Errorf("fashionmnist: writing synthetic %s labels: %w", split, err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := write("train", nTrain); err != nil {
		return err
	}
	return write("test", nTest)
}
