package models

// The float32 inference path of ConvNet. Acting (a forward pass on a tape
// with gradients off) is where rollouts spend the network's time, and
// there float64 buys nothing: the convolutions then run in float32, at
// twice the SIMD width and half the bytes, and only their features are
// widened back to float64 for the fully connected heads. Training keeps
// float64 throughout.
//
// The convolutions unfold no patches. The padded image is rearranged
// "space to depth": each S×S block of pixels (S the stride) becomes one
// pixel of S·S·Cin channels, and the kernel's weights the same way, so that
// the strided KH×KW convolution becomes a stride-1 convolution with a
// ⌈KH/S⌉×⌈KW/S⌉ kernel. With stride 1 the input values under one kernel
// row are contiguous and the next output position's start one pixel on:
// each kernel row is then one matrix product over every output position of
// the images, reading the rearranged images in place (row stride one
// pixel). Positions past the right edge of each row compute values that
// are dropped.

// use32 reports whether a forward pass on t takes the float32 path:
// gradients off and AVX-512 kernels present (the portable float32 loop is
// slower than the float64 kernels, so without them acting stays float64).
func use32(t *Tape) bool { return t.noGrad && haveAVX512 }

// scratch32 is a tape's float32 workspace, grown to the largest batch seen
// and reused, so that acting allocates nothing after its first call.
type scratch32 struct {
	act    [2][]float32 // a layer's input and output, in turns
	blocks []float32    // a chunk of images rearranged space to depth
	prod   []float32    // their products, with the dropped positions
	w, b   []float32    // the layer's kernel and bias, narrowed
}

func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// features32 runs the convolutional layers on obs in float32 and returns
// their flattened output as a constant float64 tensor on t.
func (n *ConvNet) features32(t *Tape, obs *Tensor) *Tensor {
	if t.f32 == nil {
		t.f32 = &scratch32{}
	}
	s, batch := t.f32, obs.Rows
	obs64 := obs.Data[:batch*n.in]
	cur := 0
	for i, l := range n.convs {
		g, cout := l.geom, l.kernel.Cols
		s.b = grow32(s.b, cout)
		narrow(s.b, l.bias.Data)
		y := grow32(s.act[1-cur], batch*g.OH*g.OW*cout)
		s.act[1-cur] = y
		if !g.whole() {
			sg := newS2D(g)
			s.w = grow32(s.w, sg.kernelLen()*cout)
			sg.packKernel(l.kernel.Data, cout, s.w)
			if i == 0 { // the observations, narrowed as they are rearranged
				conv32(sg, s, batch, obs64, cout, y)
			} else {
				conv32(sg, s, batch, s.act[cur], cout, y)
			}
			cur = 1 - cur
			continue
		}
		x := s.act[cur]
		if i == 0 {
			x = grow32(x, len(obs64))
			s.act[cur] = x
			narrow(x, obs64)
		}
		fillRows(y, s.b, batch)
		if batch <= smallM {
			// A kernel as large as the image, used by few rows: the
			// kernels narrow its weights as they stream them.
			gemm32d(batch, cout, g.patch(), x, g.patch(), l.kernel.Data, cout, y, cout, true)
		} else {
			s.w = grow32(s.w, len(l.kernel.Data))
			narrow(s.w, l.kernel.Data)
			gemm32(batch, cout, g.patch(), x, g.patch(), s.w, cout, y, cout, true)
		}
		cur = 1 - cur
	}
	out := s.act[cur]
	_, h := t.push(opLeaf, batch, len(out)/batch, nil, nil, nil)
	widen(h.Data, out)
	return h
}

// fillRows sets each of the first rows rows of y (len(row) values each) to
// row.
func fillRows(y, row []float32, rows int) {
	n := len(row)
	for i := 0; i < rows; i++ {
		copy(y[i*n:(i+1)*n], row)
	}
}

// s2dGeom is a convolution recast space to depth (see the top of this
// file).
type s2dGeom struct {
	g      ConvGeom
	kh, kw int // the kernel in blocks: ⌈KH/S⌉ × ⌈KW/S⌉
	// The rearranged image: hs rows of ws pixels of cs channels, enough
	// for every output position (OH+kh-1 rows, OW+kw-1 columns).
	hs, ws, cs int
}

func newS2D(g ConvGeom) s2dGeom {
	s := g.Stride
	kh, kw := (g.KH+s-1)/s, (g.KW+s-1)/s
	return s2dGeom{g: g, kh: kh, kw: kw, hs: g.OH + kh - 1, ws: g.OW + kw - 1, cs: s * s * g.Cin}
}

func (s s2dGeom) imageLen() int  { return s.hs * s.ws * s.cs }
func (s s2dGeom) kernelLen() int { return s.kh * s.kw * s.cs }

// packImages writes images b0 to b1 of x (H·W·Cin values each, float32 or
// the observations' float64) rearranged into dst (imageLen values each),
// narrowed, with zeros in the padding. Pixels that no output position
// reads (past a valid kernel's last position) are left out.
func packImages[F float32 | float64](s s2dGeom, x []F, b0, b1 int, dst []float32) {
	g, st := s.g, s.g.Stride
	clear(dst[:(b1-b0)*s.imageLen()])
	imgLen := g.H * g.W * g.Cin
	_, f64 := any(x).([]float64)
	wide := f64 && haveAVX512 && st*g.Cin >= 16
	for b := b0; b < b1; b++ {
		img := x[b*imgLen : (b+1)*imgLen]
		out := dst[(b-b0)*s.imageLen() : (b-b0+1)*s.imageLen()]
		// Walk the blocks' coordinates alongside the image rows (no
		// division per row); within a row, the up to S pixels of one
		// block are contiguous on both sides.
		by, dy := g.PadTop/st, g.PadTop%st
		for y := 0; y < g.H && by < s.hs; y++ {
			row := out[by*s.ws*s.cs+dy*st*g.Cin:]
			src := img[y*g.W*g.Cin : (y+1)*g.W*g.Cin]
			for bx := 0; bx < s.ws; bx++ {
				x0, x1 := max(bx*st-g.PadLeft, 0), min(bx*st+st-g.PadLeft, g.W)
				if x0 >= x1 {
					continue
				}
				o := bx*s.cs + (x0+g.PadLeft-bx*st)*g.Cin
				if wide {
					// 16 values or more (the 84×84×4 stack's first
					// layer): the vector conversion.
					narrow(row[o:o+(x1-x0)*g.Cin], any(src[x0*g.Cin:(x1)*g.Cin]).([]float64))
					continue
				}
				narrowShort(row[o:o+(x1-x0)*g.Cin], src[x0*g.Cin:])
			}
			if dy++; dy == st {
				by, dy = by+1, 0
			}
		}
	}
}

// narrowShort writes float32(src[i]) into dst[i] for the few values of a
// block row.
func narrowShort[F float32 | float64](dst []float32, src []F) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = float32(v)
	}
}

// packKernel narrows kernel [KH·KW·Cin × cout] into dst [kh·kw·cs × cout]
// in the rearranged order: the weight of kernel row ky, column kx and
// channel c moves to block (ky/S, kx/S), channel ((ky%S)·S + kx%S)·Cin + c;
// positions past the kernel's edge (when S does not divide it) are zero.
func (s s2dGeom) packKernel(kernel []float64, cout int, dst []float32) {
	g, st := s.g, s.g.Stride
	clear(dst[:s.kernelLen()*cout])
	for ky := 0; ky < g.KH; ky++ {
		for kx := 0; kx < g.KW; kx++ {
			src := ((ky*g.KW + kx) * g.Cin) * cout
			row := ((ky/st*s.kw+kx/st)*s.cs + (ky%st*st+kx%st)*g.Cin) * cout
			narrow(dst[row:row+g.Cin*cout], kernel[src:src+g.Cin*cout])
		}
	}
}

// chunk is how many images conv rearranges and multiplies at a time:
// about 64 Ki values (256 KiB) of rearranged images and products, which
// stay in the L2 cache between the kernel rows' products.
func (s s2dGeom) chunk(batch, cout int) int {
	per := s.hs * s.ws * (s.cs + cout)
	return min(max(65536/per, 1), batch)
}

// conv32 is Conv2DRelu in float32 without gradients: the batch x convolved
// with the rearranged kernel in sc.w, plus the bias in sc.b, ReLU, into y
// [batch × OH·OW·cout]. Row r of a chunk's product is output position
// (r / ws, r % ws) of its image's rearranged grid; kernel row i multiplies
// the rearranged images from row r + i·ws on, kw pixels of cs channels,
// by the kernel's rows for that row of blocks.
func conv32[F float32 | float64](s s2dGeom, sc *scratch32, batch int, x []F, cout int, y []float32) {
	g := s.g
	step := s.chunk(batch, cout)
	sc.blocks = grow32(sc.blocks, step*s.imageLen())
	sc.prod = grow32(sc.prod, step*s.hs*s.ws*cout)
	k := s.kw * s.cs
	for b0 := 0; b0 < batch; b0 += step {
		b1 := min(b0+step, batch)
		packImages(s, x, b0, b1, sc.blocks)
		// The last row needed: the last image's last output position.
		m := (b1-b0-1)*s.hs*s.ws + (g.OH-1)*s.ws + g.OW
		prod := sc.prod[:m*cout]
		fillRows(prod, sc.b, m)
		for i := 0; i < s.kh; i++ {
			a := sc.blocks[i*s.ws*s.cs:]
			gemm32(m, cout, k, a, s.cs, sc.w[i*k*cout:(i+1)*k*cout], cout, prod, cout, i == s.kh-1)
		}
		// Keep the real output positions.
		for b := b0; b < b1; b++ {
			for oy := 0; oy < g.OH; oy++ {
				src := ((b-b0)*s.hs*s.ws + oy*s.ws) * cout
				dst := ((b*g.OH + oy) * g.OW) * cout
				copy(y[dst:dst+g.OW*cout], prod[src:src+g.OW*cout])
			}
		}
	}
}
