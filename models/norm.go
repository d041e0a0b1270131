package models

import (
	"fmt"
	"math"
)

// BatchNorm is batch normalisation (Ioffe & Szegedy) over the channels of
// x [batch×P·C]: P positions of C channels, channel fastest (the layout of
// Conv2D's output; P = 1 after a dense layer). In training each channel is
// normalised with the mean and variance of its batch×P values, then scaled
// and shifted by learned Gamma and Beta; running averages of the
// statistics serve evaluation.
//
// Gamma and Beta are the two rows of one parameter tensor "name/affine"
// [2×C], so they ship with the other weights. The running statistics are
// not trained; a data-parallel trainer copies them from one replica (see
// Stats and SetStats).
type BatchNorm struct {
	C int
	// Affine holds Gamma (row 0, initially 1) and Beta (row 1, initially 0).
	Affine *Tensor
	// Momentum is the weight of the running statistics' history (0.9).
	Momentum float64
	// Eps is added to the variance (1e-5).
	Eps float64
	// RunMean and RunVar are the running statistics (unbiased variance).
	RunMean, RunVar []float64
}

// NewBatchNorm adds a batch-normalisation layer over c channels to p.
func NewBatchNorm(p *Params, name string, c int) *BatchNorm {
	bn := &BatchNorm{C: c, Affine: p.New(name+"/affine", 2, c), Momentum: 0.9, Eps: 1e-5,
		RunMean: make([]float64, c), RunVar: make([]float64, c)}
	for j := 0; j < c; j++ {
		bn.Affine.Data[j] = 1
		bn.RunVar[j] = 1
	}
	return bn
}

// Forward normalises x with batch statistics (train) or the running ones.
// Training updates the running statistics.
func (bn *BatchNorm) Forward(t *Tape, x *Tensor, train bool) *Tensor {
	if x.Cols%bn.C != 0 {
		panic(fmt.Sprintf("models: BatchNorm over %d channels of %s; the columns must be a multiple of the channels", bn.C, x.shape()))
	}
	return t.Apply(&bnFunc{bn: bn, train: train}, x, bn.Affine, x.Cols)
}

// Stats returns the running statistics as one vector (means, then
// variances).
func (bn *BatchNorm) Stats() []float64 {
	return append(append([]float64(nil), bn.RunMean...), bn.RunVar...)
}

// SetStats restores statistics returned by Stats.
func (bn *BatchNorm) SetStats(s []float64) error {
	if len(s) != 2*bn.C {
		return fmt.Errorf("models: BatchNorm over %d channels given %d statistics, want %d", bn.C, len(s), 2*bn.C)
	}
	copy(bn.RunMean, s[:bn.C])
	copy(bn.RunVar, s[bn.C:])
	return nil
}

// bnFunc is one application of a BatchNorm.
type bnFunc struct {
	bn    *BatchNorm
	train bool
}

// stats returns the per-channel mean and 1/√(var+eps) used to normalise x,
// and the biased variance.
func (f *bnFunc) stats(x *Tensor, mean, inv []float64) {
	bn := f.bn
	if !f.train {
		for c := range mean {
			mean[c] = bn.RunMean[c]
			inv[c] = 1 / math.Sqrt(bn.RunVar[c]+bn.Eps)
		}
		return
	}
	clear(mean)
	clear(inv)
	data := x.Data[:x.Len()]
	for q := 0; q < len(data); q += bn.C {
		addTo(mean, data[q:q+bn.C])
	}
	n := float64(len(data) / bn.C)
	for c := range mean {
		mean[c] /= n
	}
	for q := 0; q < len(data); q += bn.C {
		for c, v := range data[q : q+bn.C] {
			d := v - mean[c]
			inv[c] += d * d
		}
	}
	for c := range inv {
		inv[c] = 1 / math.Sqrt(inv[c]/n+bn.Eps)
	}
}

// Forward implements Func.
func (f *bnFunc) Forward(x, w, out *Tensor) error {
	bn := f.bn
	mean, inv := make([]float64, bn.C), make([]float64, bn.C)
	f.stats(x, mean, inv)
	if f.train {
		n := float64(x.Len() / bn.C)
		for c := range mean {
			v := 1/(inv[c]*inv[c]) - bn.Eps
			if n > 1 {
				v *= n / (n - 1)
			}
			bn.RunMean[c] = bn.Momentum*bn.RunMean[c] + (1-bn.Momentum)*mean[c]
			bn.RunVar[c] = bn.Momentum*bn.RunVar[c] + (1-bn.Momentum)*v
		}
	}
	gamma, beta := w.Data[:bn.C], w.Data[bn.C:2*bn.C]
	// y = x·(γ·inv) + (β - mean·γ·inv)
	scale, shift := mean, inv // reuse: mean and inv are not needed after
	for c := range scale {
		s := gamma[c] * inv[c]
		shift[c] = beta[c] - mean[c]*s
		scale[c] = s
	}
	data, o := x.Data[:x.Len()], out.Data[:x.Len()]
	for q := 0; q < len(data); q += bn.C {
		xs, os := data[q:q+bn.C], o[q:q+bn.C]
		for c, v := range xs {
			os[c] = v*scale[c] + shift[c]
		}
	}
	return nil
}

// Backward implements Func. With batch statistics, for x̂ = (x-μ)·inv and
// dx̂ = dy·γ over the n values of a channel:
// dx = inv·(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)).
func (f *bnFunc) Backward(x, w, out *Tensor, outGrad, xGrad, wGrad []float64) error {
	bn := f.bn
	C := bn.C
	mean, inv := make([]float64, C), make([]float64, C)
	f.stats(x, mean, inv)
	data, g := x.Data[:x.Len()], outGrad[:x.Len()]
	sumG, sumGX := make([]float64, C), make([]float64, C) // Σdy, Σdy·x̂
	for q := 0; q < len(data); q += C {
		for c, v := range data[q : q+C] {
			d := g[q+c]
			sumG[c] += d
			sumGX[c] += d * (v - mean[c]) * inv[c]
		}
	}
	if wGrad != nil {
		for c := 0; c < C; c++ {
			wGrad[c] += sumGX[c]
			wGrad[C+c] += sumG[c]
		}
	}
	if xGrad == nil {
		return nil
	}
	gamma := w.Data[:C]
	if !f.train { // the statistics are constants
		for q := 0; q < len(data); q += C {
			for c := range C {
				xGrad[q+c] += g[q+c] * gamma[c] * inv[c]
			}
		}
		return nil
	}
	n := float64(len(data) / C)
	for c := range C {
		sumG[c] /= n
		sumGX[c] /= n
	}
	for q := 0; q < len(data); q += C {
		for c, v := range data[q : q+C] {
			xh := (v - mean[c]) * inv[c]
			xGrad[q+c] += gamma[c] * inv[c] * (g[q+c] - sumG[c] - xh*sumGX[c])
		}
	}
	return nil
}
