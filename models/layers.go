package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Dense is a fully connected layer y = x·W + B with W [in×out] and B [1×out].
type Dense struct {
	W, B *Tensor
}

// NewDense adds a layer's weights ("name/w", "name/b") to p. The weights
// start at zero; initialise them with InitNormc, InitXavier or
// InitOrthogonal.
func NewDense(p *Params, name string, in, out int) *Dense {
	return &Dense{W: p.New(name+"/w", in, out), B: p.New(name+"/b", 1, out)}
}

// Forward applies the layer to x [batch×in].
func (d *Dense) Forward(t *Tape, x *Tensor) *Tensor { return t.Linear(x, d.W, d.B) }

// Init names a weight initialiser.
type Init string

// The initialisers NewFullyConnected understands.
const (
	// InitNameNormc draws normal weights and scales each output unit's
	// incoming weights to norm `gain` (RLlib's normc_initializer).
	InitNameNormc Init = "normc"
	// InitNameOrthogonal draws a random orthogonal matrix times `gain`
	// (the choice of CleanRL and OpenAI Baselines).
	InitNameOrthogonal Init = "orthogonal"
	// InitNameXavier draws uniformly from ±gain·√(6/(in+out)) (Glorot).
	InitNameXavier Init = "xavier"
)

// Apply initialises w with this initialiser and the given gain.
func (i Init) Apply(w *Tensor, gain float64, rng *rand.Rand) error {
	switch i {
	case InitNameNormc:
		InitNormc(w, gain, rng)
	case InitNameOrthogonal, "":
		InitOrthogonal(w, gain, rng)
	case InitNameXavier:
		InitXavier(w, gain, rng)
	default:
		return fmt.Errorf("models: unknown initializer %q; use normc, orthogonal or xavier", string(i))
	}
	return nil
}

// InitNormc fills w [in×out] with standard normal draws, then scales each
// column (the weights into one output unit) to Euclidean norm std.
func InitNormc(w *Tensor, std float64, rng *rand.Rand) {
	for k := range w.Data {
		w.Data[k] = rng.NormFloat64()
	}
	for j := 0; j < w.Cols; j++ {
		s := 0.0
		for i := 0; i < w.Rows; i++ {
			v := w.Data[i*w.Cols+j]
			s += v * v
		}
		f := std / math.Sqrt(s)
		for i := 0; i < w.Rows; i++ {
			w.Data[i*w.Cols+j] *= f
		}
	}
}

// InitXavier fills w [in×out] uniformly from ±gain·√(6/(in+out)).
func InitXavier(w *Tensor, gain float64, rng *rand.Rand) {
	a := gain * math.Sqrt(6/float64(w.Rows+w.Cols))
	for k := range w.Data {
		w.Data[k] = (2*rng.Float64() - 1) * a
	}
}

// InitOrthogonal fills w with gain times a random matrix with orthonormal
// columns (or rows, when w is wide), from the QR decomposition of a
// Gaussian matrix with the signs fixed so the draw is uniform. It forms
// only the thin factor, so large layers stay cheap.
func InitOrthogonal(w *Tensor, gain float64, rng *rand.Rand) {
	m, n := w.Rows, w.Cols
	tall := m >= n
	if !tall {
		m, n = n, m
	}
	a := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
	for i := range a.Data {
		a.Data[i] = rng.NormFloat64()
	}
	tau := make([]float64, n)
	work := make([]float64, 1)
	lapack64.Geqrf(a, tau, work, -1)
	work = make([]float64, int(work[0]))
	lapack64.Geqrf(a, tau, work, len(work))
	signs := make([]float64, n)
	for j := range signs {
		signs[j] = 1
		if a.Data[j*n+j] < 0 {
			signs[j] = -1
		}
	}
	lapack64.Orgqr(a, tau, work, -1)
	if need := int(work[0]); need > len(work) {
		work = make([]float64, need)
	}
	lapack64.Orgqr(a, tau, work, len(work))
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			v := gain * signs[j] * a.Data[i*n+j]
			if tall {
				w.Data[i*w.Cols+j] = v
			} else {
				w.Data[j*w.Cols+i] = v
			}
		}
	}
}
