package models

import (
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

// whole reports whether the kernel's only position covers each image
// exactly (a valid kernel the size of its input, as the last layer of the
// default stacks has): then the unfolded patches are the images themselves.
func (g ConvGeom) whole() bool {
	return g.OH == 1 && g.OW == 1 && g.KH == g.H && g.KW == g.W && g.PadTop == 0 && g.PadLeft == 0
}

// chunkImages is how many images Conv2D unfolds at a time: enough for
// about 32,768 patch values (256 KiB, which stays in the L2 cache while the
// matrix product reads it back) and at least 64 output positions.
func (g ConvGeom) chunkImages(batch int) int {
	pos := g.OH * g.OW
	n := max(32768/(pos*g.patch()), (64+pos-1)/pos, 1)
	return min(n, batch)
}

// Conv2D convolves x [batch×H·W·Cin] with kernel [KH·KW·Cin × Cout] (rows
// in kernel-row, kernel-column, channel order) and adds bias [1×Cout] (or
// nil), giving [batch × OH·OW·Cout] in height-width-channel order.
//
// It unfolds the patches of a few images at a time into a matrix (im2col)
// and multiplies it by the kernel, so the unfolded patches stay in cache
// and are never stored for the whole batch: the backward pass unfolds them
// again.
func (t *Tape) Conv2D(x *Tensor, g ConvGeom, kernel, bias *Tensor) *Tensor {
	return t.conv2D(x, g, kernel, bias, false)
}

// Conv2DRelu is Relu(Conv2D(x, g, kernel, bias)) as one operation: the
// activation is applied in place on each chunk of the product's output
// while it is in cache, and its gradient folded into the convolution's
// backward pass, saving a tensor and a pass over it in each direction.
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
	pos, batch := g.OH*g.OW, x.Rows
	step := batch
	if !g.whole() {
		step = g.chunkImages(batch)
		nd.aux = grow(nd.aux, step*pos*k)
	}
	for b0 := 0; b0 < batch; b0 += step {
		b1 := min(b0+step, batch)
		rows := (b1 - b0) * pos
		o := out.Data[b0*pos*cout : b1*pos*cout]
		var cols []float64
		if g.whole() {
			cols = x.Data[b0*k : b1*k]
		} else {
			cols = nd.aux[:rows*k]
			im2col(g, x.Data, b0, b1, cols)
		}
		beta := 0.0
		if bias != nil {
			for i := 0; i < rows; i++ {
				copy(o[i*cout:(i+1)*cout], bias.Data)
			}
			beta = 1
		}
		gemm(false, false, rows, cout, k, cols, k, kernel.Data, cout, beta, o, cout, &nd.scratch)
		if relu {
			reluInPlace(o)
		}
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

// im2col writes, for images b0 to b1 of the batch x (one image of
// H·W·Cin values after another) and every output position, the patch under
// the kernel as one row of cols (zeros where the kernel overhangs the
// padding). The float32 inference path unfolds with it too.
func im2col[F float32 | float64](g ConvGeom, x []F, b0, b1 int, cols []F) {
	k, rowLen := g.patch(), g.KW*g.Cin
	imgLen := g.H * g.W * g.Cin
	r := 0
	for b := b0; b < b1; b++ {
		img := x[b*imgLen : (b+1)*imgLen]
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
						copyShort(seg, img[(iy*g.W+x0)*g.Cin:])
						continue
					}
					for kx := 0; kx < g.KW; kx++ {
						s := seg[kx*g.Cin : (kx+1)*g.Cin]
						if ix := x0 + kx; ix >= 0 && ix < g.W {
							copyShort(s, img[(iy*g.W+ix)*g.Cin:])
						} else {
							clear(s)
						}
					}
				}
			}
		}
	}
}

// copyShort copies src's first len(dst) values into dst: for the few values
// of a kernel row on few channels (4 on a one-channel image) a loop is
// several times cheaper than copy's call into memmove.
func copyShort[F float32 | float64](dst, src []F) {
	if len(dst) >= 32 {
		copy(dst, src)
		return
	}
	src = src[:len(dst)]
	//lint:ignore S1001 the loop is the point: copy calls memmove
	for i, v := range src {
		dst[i] = v
	}
}

// col2imAdd adds each patch gradient in dcols (images b0 to b1) back onto
// the image positions it came from in xg (the adjoint of im2col).
func col2imAdd(g ConvGeom, dcols []float64, xg []float64, b0, b1 int) {
	k, rowLen := g.patch(), g.KW*g.Cin
	r := 0
	imgLen := g.H * g.W * g.Cin
	for b := b0; b < b1; b++ {
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
					if x0 >= 0 && x0+g.KW <= g.W {
						addTo(img[(iy*g.W+x0)*g.Cin:(iy*g.W+x0+g.KW)*g.Cin], seg)
						continue
					}
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

// convBackward is Conv2D's backward pass, chunk by chunk like the forward
// pass: unfold the chunk's patches again, add colsᵀ·dOut to the kernel's
// gradient, and fold dOut·Kᵀ back onto the images' gradient.
func (nd *node) convBackward() {
	g, x, kernel, bias := nd.conv, nd.a, nd.b, nd.c
	grad := nd.out.Grad
	if nd.i1 == 1 { // the fused ReLU: only positive outputs pass gradient
		reluMaskGrad(grad, nd.out.Data)
	}
	k, cout := g.patch(), kernel.Cols
	pos, batch := g.OH*g.OW, x.Rows
	if bias != nil && bias.Grad != nil {
		bg := bias.Grad[:cout]
		for i := 0; i < batch*pos; i++ {
			addTo(bg, grad[i*cout:(i+1)*cout])
		}
	}
	if g.whole() {
		nd.wholeBackward()
		return
	}
	step := g.chunkImages(batch)
	var kT, dcols []float64
	if x.Grad != nil {
		// Kᵀ once for all chunks, then dcols = dOut·Kᵀ per chunk.
		nd.aux2 = grow(nd.aux2, k*cout+step*pos*k)
		kT, dcols = nd.aux2[:k*cout], nd.aux2[k*cout:]
		transpose(kernel.Data, k, cout, cout, kT)
	}
	for b0 := 0; b0 < batch; b0 += step {
		b1 := min(b0+step, batch)
		rows := (b1 - b0) * pos
		dOut := grad[b0*pos*cout : b1*pos*cout]
		if kernel.Grad != nil { // dK += colsᵀ·dOut
			cols := nd.aux[:rows*k]
			im2col(g, x.Data, b0, b1, cols)
			gemm(true, false, k, cout, rows, cols, k, dOut, cout, 1, kernel.Grad, cout, &nd.scratch)
		}
		if x.Grad != nil {
			dc := dcols[:rows*k]
			gemm(false, false, rows, k, cout, dOut, cout, kT, k, 0, dc, k, &nd.scratch)
			col2imAdd(g, dc, x.Grad, b0, b1)
		}
	}
}

// wholeBackward is the backward pass of a convolution whose kernel covers
// each image (ConvGeom.whole): a fully connected layer on the flattened
// images, so the unfolded patches are x itself and dX is dOut·Kᵀ. When the
// kernel is larger than the batch's gradients, it computes (K·dOutᵀ)ᵀ
// instead, transposing the two small matrices rather than the kernel.
func (nd *node) wholeBackward() {
	x, kernel := nd.a, nd.b
	grad := nd.out.Grad
	k, cout, batch := kernel.Rows, kernel.Cols, x.Rows
	if kernel.Grad != nil {
		gemm(true, false, k, cout, batch, x.Data, k, grad, cout, 1, kernel.Grad, cout, &nd.scratch)
	}
	if x.Grad == nil {
		return
	}
	if k*cout <= batch*(k+cout) {
		gemm(false, true, batch, k, cout, grad, cout, kernel.Data, cout, 1, x.Grad, k, &nd.scratch)
		return
	}
	nd.aux2 = grow(nd.aux2, cout*batch+k*batch)
	gT, dxT := nd.aux2[:cout*batch], nd.aux2[cout*batch:cout*batch+k*batch]
	transpose(grad, batch, cout, cout, gT)
	gemm(false, false, k, batch, cout, kernel.Data, cout, gT, batch, 0, dxT, batch, &nd.scratch)
	xg := x.Grad
	for p := 0; p < k; p++ {
		row := dxT[p*batch : (p+1)*batch]
		for b, v := range row {
			xg[b*k+p] += v
		}
	}
}

// transpose writes the transpose of the rows×cols matrix a (row stride
// lda) into t (cols×rows, contiguous).
func transpose[F float32 | float64](a []F, rows, cols, lda int, t []F) {
	transposeBlock(a, rows, cols, lda, 0, rows, t[:rows*cols])
}

// transposeBlock writes rows [lo, hi) of the rows×cols matrix a (row
// stride lda) into their columns of t (cols×rows, contiguous): for float64
// with AVX-512, eight rows at a time by the 8×8 tile kernel; otherwise in
// 8×8 tiles of scalar copies, so that both sides are read and written a
// cache line at a time.
func transposeBlock[F float32 | float64](a []F, rows, cols, lda, lo, hi int, t []F) {
	const tile = 8
	if lo >= hi || cols == 0 {
		return
	}
	if (hi-1)*lda+cols > len(a) || (cols-1)*rows+hi > len(t) {
		panic(fmt.Sprintf("models: transpose of rows %d to %d of %dx%d (stride %d): operands too short (%d, %d)", lo, hi, rows, cols, lda, len(a), len(t)))
	}
	if a64, ok := any(a).([]float64); ok && haveAVX512 && cols >= tile {
		t64, c8 := any(t).([]float64), cols&^(tile-1)
		for ; lo+tile <= hi; lo += tile {
			transpose8xN(c8/tile, &a64[lo*lda], lda, &t64[lo], rows)
			for i := lo; i < lo+tile; i++ {
				for j := c8; j < cols; j++ {
					t64[j*rows+i] = a64[i*lda+j]
				}
			}
		}
	}
	for i0 := lo; i0 < hi; i0 += tile {
		i1 := min(i0+tile, hi)
		for j0 := 0; j0 < cols; j0 += tile {
			j1 := min(j0+tile, cols)
			for i := i0; i < i1; i++ {
				row := a[i*lda+j0 : i*lda+j1]
				for j, v := range row {
					t[(j0+j)*rows+i] = v
				}
			}
		}
	}
}
