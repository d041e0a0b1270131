package models

import (
	"fmt"
	"math"
)

// The float32 training path of ConvNet. On a tape that records gradients,
// the convolutional layers run as one tape operation (opConv32) that
// computes forward and backward passes in float32, with the space-to-depth
// convolutions of the acting path (conv32.go) and their adjoints:
//
//   - forward: each strided layer rearranges its batch space to depth (kept
//     for the backward pass) and multiplies each of its kernel rows, a few
//     images at a time so that they stay in cache; a layer whose kernel
//     covers the image is one product. Activations are kept in float32.
//   - backward: the ReLU mask, the bias gradient as column sums, the weight
//     gradient of kernel row i as dProdᵀ·A_i (A_i the rearranged images from
//     block row i on, rows overlapping one pixel apart), and the input
//     gradient as one product per kernel block (i, j), dProd·W_ijᵀ, added
//     onto the rearranged images' gradient and moved back to image order.
//
// The weight gradients use the kernels with A transposed (gemm32T), so
// neither the output gradients nor the inputs are transposed; the last
// layer's input gradient transposes only batch-sized blocks.
//
// The parameters stay float64: the model's public weights and gradients
// are flat float64 vectors, which optimizers, parameter servers, gradient
// shipping and checkpoints share. The strided layers' weights are narrowed
// once per forward pass; the image-sized last layer's are narrowed as the
// kernels stream them (and again, a block at a time, for its input
// gradient). The float32 gradients are added into the float64 ones once
// per backward pass. The fully connected heads train in float64 on the
// widened features.

// convTrain32 is one opConv32 operation's state, owned by its tape slot and
// reused by the next step's operation in that slot.
type convTrain32 struct {
	net    *ConvNet
	asm    bool // the AVX-512 kernels (else the portable loops)
	batch  int
	obs    []float64 // the observations (viewed, not copied)
	layers []layer32
	xT     []float32 // scratch for transposes
	dT     []float32
	dW     []float32 // a layer's weight gradient before it is widened
	ones   []float32 // ones, to sum columns with the kernels
}

// layer32 is one convolutional layer's float32 buffers.
type layer32 struct {
	s       s2dGeom   // strided layers: the space-to-depth geometry
	whole   bool      // the kernel covers the image (ConvGeom.whole)
	w       []float32 // weights: rearranged [kh·kw·cs × cout], or [patch × cout] when whole (empty when streamed)
	wT      []float32 // strided: each block (i, j)'s weights transposed, [cout × cs]
	b       []float32
	x       []float32 // whole layers on the observations: them narrowed
	blocks  []float32 // strided: the batch rearranged space to depth
	prod    []float32 // strided: products on the rearranged grid, then their gradient
	y, dy   []float32 // output after ReLU and its gradient [batch × OH·OW·cout]
	dBlocks []float32 // strided, not first: a chunk's rearranged images' gradient
}

// train32 reports whether a forward pass of n on t takes the float32
// training path and, if so, with the AVX-512 kernels.
func (n *ConvNet) train32(t *Tape, obs *Tensor) (use, asm bool) {
	if t.noGrad || obs.Grad != nil || obs.Rows == 0 {
		return false, false
	}
	switch n.prec {
	case precAuto:
		return haveAVX512, haveAVX512
	case prec32Portable:
		return true, false
	}
	return false, false
}

// features32Train records the convolutional layers as one float32
// operation and returns their flattened output as a float64 tensor whose
// gradient the operation propagates into the layers' parameters.
func (n *ConvNet) features32Train(t *Tape, obs *Tensor, asm bool) *Tensor {
	last := n.convs[len(n.convs)-1]
	feat := last.geom.OH * last.geom.OW * last.kernel.Cols
	nd, out := t.push(opConv32, obs.Rows, feat, obs, last.kernel, nil)
	if nd.c32 == nil || nd.c32.net != n {
		nd.c32 = &convTrain32{net: n, layers: make([]layer32, len(n.convs))}
	}
	c := nd.c32
	c.asm, c.batch, c.obs = asm, obs.Rows, obs.Data[:obs.Rows*n.in]
	c.forward()
	widen(out.Data, c.layers[len(c.layers)-1].y)
	return out
}

// forward runs the layers on c.obs.
func (c *convTrain32) forward() {
	batch := c.batch
	for i, cl := range c.net.convs {
		l := &c.layers[i]
		g, cout := cl.geom, cl.kernel.Cols
		l.whole = g.whole()
		l.b = grow32(l.b, cout)
		narrow(l.b, cl.bias.Data)
		l.y = grow32(l.y, batch*g.OH*g.OW*cout)
		if l.whole {
			var x []float32
			if i == 0 {
				l.x = grow32(l.x, len(c.obs))
				narrow(l.x, c.obs)
				x = l.x
			} else {
				x = c.layers[i-1].y
			}
			fillRows(l.y, l.b, batch)
			if c.asm && batch <= smallM {
				// Few rows: the kernels narrow the weights as they
				// stream them (as acting does), and the backward pass
				// narrows them again a block at a time; no float32 copy
				// of the whole kernel is written.
				gemm32d(batch, cout, g.patch(), x, g.patch(), cl.kernel.Data, cout, l.y, cout, true)
				l.w = l.w[:0]
				continue
			}
			l.w = grow32(l.w, len(cl.kernel.Data))
			narrow(l.w, cl.kernel.Data)
			gemm32k(c.asm, batch, cout, g.patch(), x, g.patch(), l.w, cout, l.y, cout, true)
			continue
		}
		s := newS2D(g)
		l.s = s
		l.w = grow32(l.w, s.kernelLen()*cout)
		s.packKernel(cl.kernel.Data, cout, l.w)
		l.blocks = grow32(l.blocks, batch*s.imageLen())
		l.prod = grow32(l.prod, s.rows(batch)*cout)
		k := s.kw * s.cs
		// A few images at a time (s.chunk), so that their rearranged
		// pixels and products stay in cache between the kernel rows.
		step := s.chunk(batch, cout)
		for b0 := 0; b0 < batch; b0 += step {
			b1 := min(b0+step, batch)
			blk := l.blocks[b0*s.imageLen():]
			if i == 0 {
				packImages(s, c.obs, b0, b1, blk)
			} else {
				packImages(s, c.layers[i-1].y, b0, b1, blk)
			}
			off, mc := b0*s.hs*s.ws, s.rows(b1-b0)
			prod := l.prod[off*cout : (off+mc)*cout]
			fillRows(prod, l.b, mc)
			for r := 0; r < s.kh; r++ {
				gemm32k(c.asm, mc, cout, k, blk[r*s.ws*s.cs:], s.cs, l.w[r*k*cout:(r+1)*k*cout], cout, prod, cout, r == s.kh-1)
			}
		}
		s.compact(l.prod, batch, cout, l.y)
	}
}

// rows is the number of rows of a batch's product on the rearranged grid:
// up to the last image's last output position.
func (s s2dGeom) rows(batch int) int {
	return (batch-1)*s.hs*s.ws + (s.g.OH-1)*s.ws + s.g.OW
}

// compact copies the real output positions of prod (on the rearranged
// grid) into y [batch × OH·OW·cout].
func (s s2dGeom) compact(prod []float32, batch, cout int, y []float32) {
	g := s.g
	for b := 0; b < batch; b++ {
		for oy := 0; oy < g.OH; oy++ {
			src := (b*s.hs*s.ws + oy*s.ws) * cout
			dst := (b*g.OH + oy) * g.OW * cout
			copy(y[dst:dst+g.OW*cout], prod[src:src+g.OW*cout])
		}
	}
}

// expandMasked is compact's adjoint with the ReLU's: it writes the output
// gradient dy, zeroed where the output y is not positive, to its positions
// on the rearranged grid in prod (images b0 to b1, from b0's first row on),
// and zeros elsewhere.
func (s s2dGeom) expandMasked(dy, y []float32, b0, b1, cout int, prod []float32) {
	g := s.g
	for b := b0; b < b1; b++ {
		for oy := 0; oy < g.OH; oy++ {
			dst := ((b-b0)*s.hs*s.ws + oy*s.ws) * cout
			src := (b*g.OH + oy) * g.OW * cout
			n := g.OW * cout
			maskInto(prod[dst:dst+n], dy[src:src+n], y[src:src+n])
			// The dropped positions up to the next output row's first.
			end := dst + s.ws*cout
			if oy == g.OH-1 {
				end = (b - b0 + 1) * s.hs * s.ws * cout
			}
			clear(prod[dst+n : min(end, len(prod))])
		}
	}
}

// maskInto writes g, zeroed where the ReLU output y is not positive, into
// dst, without branches: y ≥ 0, so y > 0 exactly when its bits are not
// all zero.
func maskInto(dst, g, y []float32) {
	g, y = g[:len(dst)], y[:len(dst)]
	i0 := 0
	if haveAVX512 {
		i0 = len(dst) &^ 15
		maskInto16(dst, g, y)
	}
	for i := i0; i < len(y); i++ {
		v := y[i]
		b := math.Float32bits(v)
		keep := uint32(int32(b|-b) >> 31)
		dst[i] = math.Float32frombits(math.Float32bits(g[i]) & keep)
	}
}

// unpackImages is packImages' adjoint: it moves the gradient of the
// rearranged images b0 to b1 (dBlocks, from b0's on) back to image order in
// dx [batch × H·W·Cin]. Each image pixel has one place in the rearrangement;
// pixels left out of it (read by no output) get zero.
func (s s2dGeom) unpackImages(dBlocks []float32, b0, b1 int, dx []float32) {
	g, st := s.g, s.g.Stride
	imgLen := g.H * g.W * g.Cin
	for b := b0; b < b1; b++ {
		img := dx[b*imgLen : (b+1)*imgLen]
		clear(img)
		src := dBlocks[(b-b0)*s.imageLen() : (b-b0+1)*s.imageLen()]
		by, dy := g.PadTop/st, g.PadTop%st
		for y := 0; y < g.H && by < s.hs; y++ {
			row := src[by*s.ws*s.cs+dy*st*g.Cin:]
			dst := img[y*g.W*g.Cin : (y+1)*g.W*g.Cin]
			for bx := 0; bx < s.ws; bx++ {
				x0, x1 := max(bx*st-g.PadLeft, 0), min(bx*st+st-g.PadLeft, g.W)
				if x0 >= x1 {
					continue
				}
				o := bx*s.cs + (x0+g.PadLeft-bx*st)*g.Cin
				copyShort(dst[x0*g.Cin:x1*g.Cin], row[o:])
			}
			if dy++; dy == st {
				by, dy = by+1, 0
			}
		}
	}
}

// backward propagates grad (d loss / d features, float64) through the
// layers into their parameters' gradients.
func (c *convTrain32) backward(grad []float64) {
	batch, last := c.batch, len(c.layers)-1
	c.layers[last].dy = grow32(c.layers[last].dy, len(grad))
	narrow(c.layers[last].dy, grad)
	for i := last; i >= 0; i-- {
		l, cl := &c.layers[i], c.net.convs[i]
		cout := cl.kernel.Cols
		var dx []float32
		if i > 0 {
			prev := &c.layers[i-1]
			prev.dy = grow32(prev.dy, len(prev.y))
			dx = prev.dy
		}
		if l.whole {
			reluMask32(l.dy, l.y)
			addColSums(cl.bias.Grad[:cout], l.dy, cout)
			c.wholeBackward(i, dx)
			continue
		}
		s, k := l.s, l.s.kw*l.s.cs
		c.dW = grow32(c.dW, s.kh*cout*k+cout)
		clear(c.dW)
		dW, db := c.dW[:s.kh*cout*k], c.dW[s.kh*cout*k:]
		if dx != nil {
			// For dBlocks at block (r, j) on += dProd·W_rjᵀ.
			l.wT = grow32(l.wT, s.kernelLen()*cout)
			for bl := 0; bl < s.kh*s.kw; bl++ {
				transpose(l.w[bl*s.cs*cout:], s.cs, cout, cout, l.wT[bl*cout*s.cs:(bl+1)*cout*s.cs])
			}
		}
		step := s.chunk(batch, cout)
		c.ones = grow32(c.ones, s.rows(step))
		for j := range c.ones {
			c.ones[j] = 1
		}
		for b0 := 0; b0 < batch; b0 += step {
			b1 := min(b0+step, batch)
			off, mc := b0*s.hs*s.ws, s.rows(b1-b0)
			prod := l.prod[off*cout : (off+mc)*cout]
			blk := l.blocks[b0*s.imageLen():]
			s.expandMasked(l.dy, l.y, b0, b1, cout, prod)
			// The bias gradient: the column sums of dProd, as 1ᵀ·dProd.
			gemm32T(c.asm, 1, cout, mc, c.ones, 1, prod, cout, db, cout)
			// dW of kernel row r = A_rᵀ·dProd, computed transposed
			// (dProdᵀ·A_r, [cout × k]) so that the product is k wide.
			for r := 0; r < s.kh; r++ {
				gemm32T(c.asm, cout, k, mc, prod, cout, blk[r*s.ws*s.cs:], s.cs, dW[r*cout*k:(r+1)*cout*k], k)
			}
			if dx == nil {
				continue
			}
			l.dBlocks = grow32(l.dBlocks, step*s.imageLen())
			dBlk := l.dBlocks[:(b1-b0)*s.imageLen()]
			clear(dBlk)
			for r := 0; r < s.kh; r++ {
				for j := 0; j < s.kw; j++ {
					bl := r*s.kw + j
					gemm32k(c.asm, mc, s.cs, cout, prod, cout, l.wT[bl*cout*s.cs:(bl+1)*cout*s.cs], s.cs, dBlk[(r*s.ws+j)*s.cs:], s.cs, false)
				}
			}
			s.unpackImages(dBlk, b0, b1, dx)
		}
		s.addKernelGradT(dW, cout, cl.kernel.Grad)
		addWiden(cl.bias.Grad[:cout], db)
	}
}

// wholeBackward is the backward pass of layer i whose kernel covers the
// image: dW = xᵀ·dy and, when dx is wanted, dx = dy·Wᵀ computed as
// (W·dyᵀ)ᵀ, so that only the batch-sized operands are transposed.
func (c *convTrain32) wholeBackward(i int, dx []float32) {
	l, cl := &c.layers[i], c.net.convs[i]
	batch, k, cout := c.batch, cl.geom.patch(), cl.kernel.Cols
	x := l.x
	if i > 0 {
		x = c.layers[i-1].y
	}
	// dW a block of rows at a time, each added into the float64 gradient
	// while it is in cache: the float32 gradient of the whole kernel is
	// never written out.
	const rows = 64
	c.dW = grow32(c.dW, rows*cout)
	for i0 := 0; i0 < k; i0 += rows {
		n := min(rows, k-i0)
		dW := c.dW[:n*cout]
		clear(dW)
		gemm32T(c.asm, n, cout, batch, x[i0:], k, l.dy, cout, dW, cout)
		addWiden(cl.kernel.Grad[i0*cout:(i0+n)*cout], dW)
	}
	if dx == nil {
		return
	}
	// dxᵀ = W·dyᵀ a block of the kernel's rows at a time (narrowed first
	// when the forward pass kept no float32 copy), each block transposed
	// into dx while in cache.
	c.dT = grow32(c.dT, cout*batch)
	transpose(l.dy, batch, cout, cout, c.dT)
	c.xT = grow32(c.xT, rows*batch)
	var wb []float32
	if len(l.w) == 0 {
		c.dW = grow32(c.dW, rows*cout)
	}
	for i0 := 0; i0 < k; i0 += rows {
		n := min(rows, k-i0)
		if len(l.w) == 0 {
			wb = c.dW[:n*cout]
			narrow(wb, cl.kernel.Data[i0*cout:(i0+n)*cout])
		} else {
			wb = l.w[i0*cout : (i0+n)*cout]
		}
		xT := c.xT[:n*batch]
		clear(xT)
		gemm32k(c.asm, n, batch, cout, wb, cout, c.dT, batch, xT, batch, false)
		for b := 0; b < batch; b++ {
			row := dx[b*k+i0 : b*k+i0+n]
			for j := range row {
				row[j] = xT[j*batch+b]
			}
		}
	}
}

// addKernelGradT adds the rearranged, transposed kernel gradient dWT (for
// each block row r, [cout × kw·cs]) into grad, the float64 gradient of the
// kernel [KH·KW·Cin × cout]: packKernel's adjoint.
func (s s2dGeom) addKernelGradT(dWT []float32, cout int, grad []float64) {
	g, st, k := s.g, s.g.Stride, s.kw*s.cs
	for ky := 0; ky < g.KH; ky++ {
		rowT := dWT[ky/st*cout*k:]
		for kx := 0; kx < g.KW; kx++ {
			col := kx/st*s.cs + (ky%st*st+kx%st)*g.Cin
			for ci := 0; ci < g.Cin; ci++ {
				dst := grad[((ky*g.KW+kx)*g.Cin+ci)*cout:][:cout]
				for o := range dst {
					dst[o] += float64(rowT[o*k+col+ci])
				}
			}
		}
	}
}

// reluMask32 zeroes the gradients g where the ReLU output y is not
// positive.
func reluMask32(g, y []float32) {
	maskInto(g, g, y)
}

// addColSums adds the column sums of x (rows of n values) to dst.
func addColSums(dst []float64, x []float32, n int) {
	for r := 0; r+n <= len(x); r += n {
		for j, v := range x[r : r+n] {
			dst[j] += float64(v)
		}
	}
}

// addWiden adds float64(src[i]) to dst[i].
func addWiden(dst []float64, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += float64(v)
	}
}

// conv32Backward is opConv32's backward pass.
func (nd *node) conv32Backward() {
	if nd.c32 == nil {
		panic(fmt.Sprintf("models: float32 convolution node without its state (op %d)", nd.op))
	}
	nd.c32.backward(nd.out.Grad)
}
