package models

import (
	"fmt"
	"math"
)

// The pooling and normalisation layers are Funcs recorded with Tape.Apply,
// the tape's extension point: their backward passes need only the inputs
// (argmax and batch statistics are recomputed from x), so a Func value
// carries no per-call state and the tape needs no new operations.

// PoolGeom is the geometry of a pooling window over images stored
// height-width-channel, one image per row: K×K windows every Stride pixels,
// without padding (windows that do not fit are dropped, as in PyTorch's
// default floor mode).
type PoolGeom struct {
	H, W, C   int // input size
	K, Stride int // window size and stride
	OH, OW    int // output size
}

// NewPoolGeom returns the geometry of k×k pooling with the given stride
// over h×w×c images.
func NewPoolGeom(h, w, c, k, stride int) (PoolGeom, error) {
	if h <= 0 || w <= 0 || c <= 0 || k <= 0 || stride <= 0 {
		return PoolGeom{}, fmt.Errorf("models: pooling %dx%dx%d with window %d stride %d: every size must be positive", h, w, c, k, stride)
	}
	if k > h || k > w {
		return PoolGeom{}, fmt.Errorf("models: %dx%d pooling window does not fit a %dx%d image", k, k, h, w)
	}
	return PoolGeom{H: h, W: w, C: c, K: k, Stride: stride, OH: (h-k)/stride + 1, OW: (w-k)/stride + 1}, nil
}

// MaxPool2D returns the maximum of each K×K window of x [batch×H·W·C],
// channel by channel: [batch×OH·OW·C]. The gradient flows to the first
// maximal element of each window.
func (t *Tape) MaxPool2D(x *Tensor, g PoolGeom) *Tensor {
	if x.Cols != g.H*g.W*g.C {
		panic(fmt.Sprintf("models: MaxPool2D of %s with geometry %dx%dx%d", x.shape(), g.H, g.W, g.C))
	}
	return t.Apply(maxPool{g}, x, nil, g.OH*g.OW*g.C)
}

type maxPool struct{ g PoolGeom }

// each calls f(b, o, i) for every image b, output element o (an index into
// the image's output row) and the input element i (into the input row)
// holding its window's maximum.
func (p maxPool) each(x *Tensor, f func(b, o, i int)) {
	g := p.g
	for b := 0; b < x.Rows; b++ {
		img := x.Row(b)
		for oy := 0; oy < g.OH; oy++ {
			for ox := 0; ox < g.OW; ox++ {
				base := ((oy*g.Stride)*g.W + ox*g.Stride) * g.C
				o := (oy*g.OW + ox) * g.C
				for c := 0; c < g.C; c++ {
					best, bi := math.Inf(-1), -1
					for ky := 0; ky < g.K; ky++ {
						row := base + ky*g.W*g.C + c
						for kx := 0; kx < g.K; kx++ {
							if v := img[row+kx*g.C]; v > best || bi < 0 {
								best, bi = v, row+kx*g.C
							}
						}
					}
					f(b, o+c, bi)
				}
			}
		}
	}
}

// Forward implements Func.
func (p maxPool) Forward(x, _, out *Tensor) error {
	p.each(x, func(b, o, i int) { out.Data[b*out.Cols+o] = x.Data[b*x.Cols+i] })
	return nil
}

// Backward implements Func.
func (p maxPool) Backward(x, _, out *Tensor, outGrad, xGrad, _ []float64) error {
	if xGrad != nil {
		p.each(x, func(b, o, i int) { xGrad[b*x.Cols+i] += outGrad[b*out.Cols+o] })
	}
	return nil
}

// GlobalAvgPool averages x [batch×P·C] (P positions of C channels,
// channel fastest) over the positions: [batch×C], the head of a ResNet.
func (t *Tape) GlobalAvgPool(x *Tensor, channels int) *Tensor {
	if channels <= 0 || x.Cols%channels != 0 {
		panic(fmt.Sprintf("models: GlobalAvgPool of %s over %d channels; the columns must be a multiple of the channels", x.shape(), channels))
	}
	return t.Apply(avgPool{channels}, x, nil, channels)
}

type avgPool struct{ c int }

// Forward implements Func.
func (p avgPool) Forward(x, _, out *Tensor) error {
	pos := x.Cols / p.c
	inv := 1 / float64(pos)
	for b := 0; b < x.Rows; b++ {
		o := out.Row(b)
		clear(o)
		img := x.Row(b)
		for q := 0; q < pos; q++ {
			addTo(o, img[q*p.c:(q+1)*p.c])
		}
		for c := range o {
			o[c] *= inv
		}
	}
	return nil
}

// Backward implements Func.
func (p avgPool) Backward(x, _, out *Tensor, outGrad, xGrad, _ []float64) error {
	if xGrad == nil {
		return nil
	}
	pos := x.Cols / p.c
	inv := 1 / float64(pos)
	for b := 0; b < x.Rows; b++ {
		g := outGrad[b*p.c : (b+1)*p.c]
		xg := xGrad[b*x.Cols : (b+1)*x.Cols]
		for q := 0; q < pos; q++ {
			seg := xg[q*p.c : (q+1)*p.c]
			for c, v := range g {
				seg[c] += v * inv
			}
		}
	}
	return nil
}
