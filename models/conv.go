package models

import (
	"encoding/json"
	"fmt"
	"math"
)

// ConvGeom is the geometry of a 2-D convolution over images stored
// height-width-channel (the layout of an observation of shape [H, W, C]),
// one image per row of a batch tensor.
type ConvGeom struct {
	H, W, Cin       int // input size
	KH, KW, Stride  int // kernel size and stride
	PadTop, PadLeft int // zero padding before the first row and column
	OH, OW          int // output size
}

// NewConvGeom returns the geometry of a kh×kw convolution with the given
// stride over h×w×cin images. With same, the output is ⌈h/stride⌉ ×
// ⌈w/stride⌉ with zero padding split evenly (extra at the bottom right);
// without, only positions where the kernel fits ("valid").
func NewConvGeom(h, w, cin, kh, kw, stride int, same bool) (ConvGeom, error) {
	if h <= 0 || w <= 0 || cin <= 0 || kh <= 0 || kw <= 0 || stride <= 0 {
		return ConvGeom{}, fmt.Errorf("models: convolution %dx%dx%d with kernel %dx%d stride %d: every size must be positive", h, w, cin, kh, kw, stride)
	}
	g := ConvGeom{H: h, W: w, Cin: cin, KH: kh, KW: kw, Stride: stride}
	if same {
		g.OH, g.OW = (h+stride-1)/stride, (w+stride-1)/stride
		g.PadTop = max((g.OH-1)*stride+kh-h, 0) / 2
		g.PadLeft = max((g.OW-1)*stride+kw-w, 0) / 2
	} else {
		if kh > h || kw > w {
			return ConvGeom{}, fmt.Errorf("models: %dx%d kernel does not fit a %dx%d image without padding", kh, kw, h, w)
		}
		g.OH, g.OW = (h-kh)/stride+1, (w-kw)/stride+1
	}
	return g, nil
}

// patch is the number of values under one kernel position.
func (g ConvGeom) patch() int { return g.KH * g.KW * g.Cin }

// Conv2D convolves x [batch×H·W·Cin] with kernel [KH·KW·Cin × Cout] (rows
// in kernel-row, kernel-column, channel order) and adds bias [1×Cout] (or
// nil), giving [batch × OH·OW·Cout] in height-width-channel order. It
// unfolds the patches into a matrix (im2col) so that the work is one
// matrix product.
func (t *Tape) Conv2D(x *Tensor, g ConvGeom, kernel, bias *Tensor) *Tensor {
	return t.conv2D(x, g, kernel, bias, false)
}

// Conv2DRelu is Relu(Conv2D(x, g, kernel, bias)) as one operation: the
// activation is applied in place on the product's output and its
// gradient folded into the convolution's backward pass, saving a tensor
// and a pass over it in each direction.
func (t *Tape) Conv2DRelu(x *Tensor, g ConvGeom, kernel, bias *Tensor) *Tensor {
	return t.conv2D(x, g, kernel, bias, true)
}

func (t *Tape) conv2D(x *Tensor, g ConvGeom, kernel, bias *Tensor, relu bool) *Tensor {
	k := g.patch()
	if x.Cols != g.H*g.W*g.Cin || kernel.Rows != k {
		panic(fmt.Sprintf("models: Conv2D of %s (geometry %dx%dx%d) with kernel %s (needs %d rows)", x.shape(), g.H, g.W, g.Cin, kernel.shape(), k))
	}
	cout := kernel.Cols
	if bias != nil && (bias.Rows != 1 || bias.Cols != cout) {
		panic(fmt.Sprintf("models: Conv2D bias %s; it must be [1x%d]", bias.shape(), cout))
	}
	nd, out := t.push(opConv, x.Rows, g.OH*g.OW*cout, x, kernel, bias)
	nd.conv = g
	nd.i1 = 0
	if relu {
		nd.i1 = 1
	}
	m := x.Rows * g.OH * g.OW
	if cap(nd.aux) < m*k {
		nd.aux = make([]float64, m*k)
	}
	cols := nd.aux[:m*k]
	im2col(g, x, cols)
	beta := 0.0
	if bias != nil {
		for i := 0; i < m; i++ {
			copy(out.Data[i*cout:(i+1)*cout], bias.Data)
		}
		beta = 1
	}
	gemm(false, false, m, cout, k, cols, k, kernel.Data, cout, beta, out.Data, cout, &nd.scratch)
	if relu {
		reluInPlace(out.Data)
	}
	return out
}

// reluInPlace sets the negative values of x to zero without branches (the
// signs of a layer's outputs are close to random, so a branch would
// mispredict half the time).
func reluInPlace(x []float64) {
	for i, v := range x {
		b := math.Float64bits(v)
		x[i] = math.Float64frombits(b &^ uint64(int64(b)>>63))
	}
}

// reluMaskGrad zeroes the gradients g where the ReLU output y is zero,
// without branches: y ≥ 0, so y > 0 exactly when its bits are not all 0.
func reluMaskGrad(g, y []float64) {
	y = y[:len(g)]
	for i, v := range y {
		b := math.Float64bits(v)
		keep := uint64(int64(b|-b) >> 63)
		g[i] = math.Float64frombits(math.Float64bits(g[i]) & keep)
	}
}

// im2col writes, for every image and output position, the patch under the
// kernel as one row of cols (zeros where the kernel overhangs the padding).
func im2col(g ConvGeom, x *Tensor, cols []float64) {
	k, rowLen := g.patch(), g.KW*g.Cin
	r := 0
	for b := 0; b < x.Rows; b++ {
		img := x.Row(b)
		for oy := 0; oy < g.OH; oy++ {
			for ox := 0; ox < g.OW; ox++ {
				dst := cols[r*k : (r+1)*k]
				r++
				x0 := ox*g.Stride - g.PadLeft
				for ky := 0; ky < g.KH; ky++ {
					seg := dst[ky*rowLen : (ky+1)*rowLen]
					iy := oy*g.Stride + ky - g.PadTop
					if iy < 0 || iy >= g.H {
						clear(seg)
						continue
					}
					if x0 >= 0 && x0+g.KW <= g.W {
						copy(seg, img[(iy*g.W+x0)*g.Cin:(iy*g.W+x0+g.KW)*g.Cin])
						continue
					}
					for kx := 0; kx < g.KW; kx++ {
						s := seg[kx*g.Cin : (kx+1)*g.Cin]
						if ix := x0 + kx; ix >= 0 && ix < g.W {
							copy(s, img[(iy*g.W+ix)*g.Cin:(iy*g.W+ix+1)*g.Cin])
						} else {
							clear(s)
						}
					}
				}
			}
		}
	}
}

// col2imAdd adds each patch gradient in dcols back onto the image
// positions it came from (the adjoint of im2col).
func col2imAdd(g ConvGeom, dcols []float64, xg []float64, rows int) {
	k, rowLen := g.patch(), g.KW*g.Cin
	r := 0
	imgLen := g.H * g.W * g.Cin
	for b := 0; b < rows; b++ {
		img := xg[b*imgLen : (b+1)*imgLen]
		for oy := 0; oy < g.OH; oy++ {
			for ox := 0; ox < g.OW; ox++ {
				src := dcols[r*k : (r+1)*k]
				r++
				x0 := ox*g.Stride - g.PadLeft
				for ky := 0; ky < g.KH; ky++ {
					iy := oy*g.Stride + ky - g.PadTop
					if iy < 0 || iy >= g.H {
						continue
					}
					seg := src[ky*rowLen : (ky+1)*rowLen]
					for kx := 0; kx < g.KW; kx++ {
						if ix := x0 + kx; ix >= 0 && ix < g.W {
							addTo(img[(iy*g.W+ix)*g.Cin:(iy*g.W+ix+1)*g.Cin], seg[kx*g.Cin:(kx+1)*g.Cin])
						}
					}
				}
			}
		}
	}
}

// convBackward is Conv2D's backward pass.
func (nd *node) convBackward() {
	g, x, kernel, bias := nd.conv, nd.a, nd.b, nd.c
	grad := nd.out.Grad
	if nd.i1 == 1 { // the fused ReLU: only positive outputs pass gradient
		reluMaskGrad(grad, nd.out.Data)
	}
	k, cout := g.patch(), kernel.Cols
	m := x.Rows * g.OH * g.OW
	cols := nd.aux[:m*k]
	if kernel.Grad != nil { // dK += colsᵀ·dOut
		gemm(true, false, k, cout, m, cols, k, grad, cout, 1, kernel.Grad, cout, &nd.scratch)
	}
	if bias != nil && bias.Grad != nil {
		for i := 0; i < m; i++ {
			addTo(bias.Grad[:cout], grad[i*cout:(i+1)*cout])
		}
	}
	if x.Grad != nil { // dcols = dOut·Kᵀ, folded back onto the images
		if cap(nd.aux2) < m*k {
			nd.aux2 = make([]float64, m*k)
		}
		dcols := nd.aux2[:m*k]
		gemm(false, true, m, k, cout, grad, cout, kernel.Data, cout, 0, dcols, k, &nd.scratch)
		col2imAdd(g, dcols, x.Grad, x.Rows)
	}
}

// ConvFilter is one convolutional layer of a ConvNet. In JSON it is
// RLlib's [out_channels, [kernel_h, kernel_w], stride], optionally followed
// by "valid" for no padding (the default pads to keep ⌈size/stride⌉).
type ConvFilter struct {
	Out, KH, KW, Stride int
	Valid               bool
}

// UnmarshalJSON reads [out, [kh, kw], stride] or [out, [kh, kw], stride, "valid"|"same"].
func (f *ConvFilter) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) < 3 || len(parts) > 4 {
		return fmt.Errorf("conv filter %s: want [out_channels, [kernel_h, kernel_w], stride] with an optional \"valid\"", b)
	}
	var kernel []int
	if json.Unmarshal(parts[0], &f.Out) != nil || json.Unmarshal(parts[1], &kernel) != nil || len(kernel) != 2 || json.Unmarshal(parts[2], &f.Stride) != nil {
		return fmt.Errorf("conv filter %s: want [out_channels, [kernel_h, kernel_w], stride] of integers", b)
	}
	f.KH, f.KW, f.Valid = kernel[0], kernel[1], false
	if len(parts) == 4 {
		var pad string
		if json.Unmarshal(parts[3], &pad) != nil || (pad != "valid" && pad != "same") {
			return fmt.Errorf("conv filter %s: padding must be \"valid\" or \"same\"", b)
		}
		f.Valid = pad == "valid"
	}
	return nil
}

// MarshalJSON writes the RLlib form read by UnmarshalJSON.
func (f ConvFilter) MarshalJSON() ([]byte, error) {
	v := []any{f.Out, []int{f.KH, f.KW}, f.Stride}
	if f.Valid {
		v = append(v, "valid")
	}
	return json.Marshal(v)
}

// String is the filter in its JSON form, as users write it.
func (f ConvFilter) String() string {
	b, _ := f.MarshalJSON()
	return string(b)
}

// The catalog's default filter stacks, RLlib's: two strided layers with
// "same" padding, then a layer whose valid 11×11 kernel covers what is left
// (21×21 → 11×11 → 1×1), giving 256 features.
var (
	convFilters84 = []ConvFilter{{16, 8, 8, 4, false}, {32, 4, 4, 2, false}, {256, 11, 11, 1, true}}
	convFilters42 = []ConvFilter{{16, 4, 4, 2, false}, {32, 4, 4, 2, false}, {256, 11, 11, 1, true}}
)

// DefaultConvFilters returns the catalog's conv_filters for h×w images:
// RLlib's stacks for 84×84 and 42×42, and an error naming the key and a
// stack that fits for any other size (as RLlib, the catalog does not guess
// a network for sizes it has no default for).
func DefaultConvFilters(h, w int) ([]ConvFilter, error) {
	switch {
	case h == 84 && w == 84:
		return append([]ConvFilter(nil), convFilters84...), nil
	case h == 42 && w == 42:
		return append([]ConvFilter(nil), convFilters42...), nil
	}
	return nil, fmt.Errorf("models: no default conv_filters for %dx%d images (there are defaults for 84x84 and 42x42); set model.conv_filters, for example %s, or preprocess the frames to 84x84 or 42x42",
		h, w, filtersString(SuggestConvFilters(h, w)))
}

// SuggestConvFilters returns a filter stack that fits h×w images: the
// 42×42 default's two strided layers (while the image is at least 8 pixels
// on each side), then a valid kernel covering what is left, giving 256
// features.
func SuggestConvFilters(h, w int) []ConvFilter {
	var fs []ConvFilter
	for _, out := range []int{16, 32} {
		if h < 8 || w < 8 {
			break
		}
		fs = append(fs, ConvFilter{Out: out, KH: 4, KW: 4, Stride: 2})
		h, w = (h+1)/2, (w+1)/2
	}
	return append(fs, ConvFilter{Out: 256, KH: h, KW: w, Stride: 1, Valid: true})
}

func filtersString(fs []ConvFilter) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

// convPlan checks filters against [h, w, c] observations and returns each
// layer's geometry. Every error names conv_filters, the layer and what
// would fit there.
func convPlan(obsShape []int, filters []ConvFilter) ([]ConvGeom, error) {
	h, w, c := obsShape[0], obsShape[1], obsShape[2]
	geoms := make([]ConvGeom, 0, len(filters))
	for i, f := range filters {
		if f.Out <= 0 || f.KH <= 0 || f.KW <= 0 || f.Stride <= 0 {
			return nil, fmt.Errorf("models: conv_filters[%d] %s: output channels, kernel sizes and stride must be positive", i, f)
		}
		if f.Valid && (f.KH > h || f.KW > w) {
			fit := f
			fit.KH, fit.KW = min(f.KH, h), min(f.KW, w)
			return nil, fmt.Errorf("models: conv_filters[%d] %s does not fit: its valid (unpadded) %dx%d kernel needs at least %dx%d input, but the layer gets %dx%dx%d (from %v observations); a kernel of at most %dx%d fits, such as %s, or drop \"valid\" to pad",
				i, f, f.KH, f.KW, f.KH, f.KW, h, w, c, obsShape, h, w, fit)
		}
		g, err := NewConvGeom(h, w, c, f.KH, f.KW, f.Stride, !f.Valid)
		if err != nil {
			return nil, fmt.Errorf("models: conv_filters[%d] %s: %w", i, f, err)
		}
		geoms = append(geoms, g)
		h, w, c = g.OH, g.OW, f.Out
	}
	return geoms, nil
}

type convLayer struct {
	geom         ConvGeom
	kernel, bias *Tensor
}

// ConvNet is RLlib's ConvolutionalNetwork for image observations
// [H, W, C]: convolutional layers (ModelOptions.ConvFilters, ReLU), then a
// FullyConnected network (Hiddens, heads, free log-std, value function) on
// the flattened features. The value function shares the convolutional
// layers.
type ConvNet struct {
	convs []convLayer
	fc    *FullyConnected
	in    int
}

// NewConvNet builds a ConvNet for observations of shape [h, w, c].
func NewConvNet(obsShape []int, numOutputs int, opts ModelOptions, seed uint64) (*ConvNet, error) {
	if len(obsShape) != 3 {
		return nil, fmt.Errorf("models: a convolutional network needs [height, width, channels] observations, got shape %v", obsShape)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	for _, d := range obsShape {
		if d <= 0 {
			return nil, fmt.Errorf("models: observation shape %v has a non-positive dimension", obsShape)
		}
	}
	filters := opts.ConvFilters
	if len(filters) == 0 {
		var err error
		if filters, err = DefaultConvFilters(obsShape[0], obsShape[1]); err != nil {
			return nil, err
		}
	}
	geoms, err := convPlan(obsShape, filters)
	if err != nil {
		return nil, err
	}
	p, rng := NewParams(), newRand(seed)
	n := &ConvNet{in: obsShape[0] * obsShape[1] * obsShape[2]}
	gain := 1.0
	if opts.Init == InitNameOrthogonal || opts.Init == "" {
		gain = math.Sqrt2
	}
	for i, g := range geoms {
		f := filters[i]
		l := convLayer{geom: g, kernel: p.New(fmt.Sprintf("conv%d/w", i), g.patch(), f.Out), bias: p.New(fmt.Sprintf("conv%d/b", i), 1, f.Out)}
		if err := opts.Init.Apply(l.kernel, gain, rng); err != nil {
			return nil, err
		}
		n.convs = append(n.convs, l)
	}
	last := geoms[len(geoms)-1]
	h, w, c := last.OH, last.OW, filters[len(filters)-1].Out
	fc, err := newFullyConnected(p, rng, h*w*c, numOutputs, opts)
	if err != nil {
		return nil, err
	}
	n.fc = fc
	return n, nil
}

// Params implements Model.
func (n *ConvNet) Params() *Params { return n.fc.params }

// NumInputs implements Model.
func (n *ConvNet) NumInputs() int { return n.in }

// NumOutputs implements Model.
func (n *ConvNet) NumOutputs() int { return n.fc.out }

// Forward implements Model.
func (n *ConvNet) Forward(t *Tape, obs *Tensor) Output {
	if obs.Cols != n.in {
		panic(fmt.Sprintf("models: ConvNet with %d inputs got observations %s", n.in, obs.shape()))
	}
	h := obs
	for _, l := range n.convs {
		h = t.Conv2DRelu(h, l.geom, l.kernel, l.bias)
	}
	return n.fc.Forward(t, h)
}
