package models

// The float32 inference path of ConvNet. Acting (a forward pass on a tape
// with gradients off) is where rollouts spend the network's time, and
// there float64 buys nothing: the convolutions then run in float32, at
// twice the SIMD width and half the bytes, and only their features are
// widened back to float64 for the fully connected heads. Training keeps
// float64 throughout.

// minBatch32 is the smallest batch the float32 path serves. For fewer
// observations the forward pass is bound by streaming the weights, and
// narrowing them to float32 on every call costs more than it saves.
const minBatch32 = 1

// use32 reports whether a forward pass of batch observations on t takes the
// float32 path: gradients off, AVX-512 kernels present (the portable
// float32 loop is slower than the float64 kernels) and a batch that pays
// for narrowing the weights.
func use32(t *Tape, batch int) bool {
	return t.noGrad && haveAVX512 && batch >= minBatch32
}

// scratch32 is a tape's float32 workspace, grown to the largest batch seen
// and reused, so that acting allocates nothing after its first call.
type scratch32 struct {
	act  [2][]float32 // a layer's input and output, in turns
	cols []float32    // a chunk's unfolded patches
	w, b []float32    // the layer's kernel and bias, narrowed
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
	x := grow32(s.act[0], batch*n.in)
	s.act[0] = x
	narrow(x, obs.Data[:batch*n.in])
	cur := 0
	for _, l := range n.convs {
		g, cout := l.geom, l.kernel.Cols
		s.b = grow32(s.b, cout)
		narrow(s.b, l.bias.Data)
		y := grow32(s.act[1-cur], batch*g.OH*g.OW*cout)
		s.act[1-cur] = y
		if g.whole() && batch <= smallM {
			// A kernel as large as the image, used by few rows: the
			// kernels narrow its weights as they stream them.
			wholeConv32(batch, s.act[cur], l.kernel.Data, s.b, g.patch(), cout, y)
		} else {
			s.w = grow32(s.w, len(l.kernel.Data))
			narrow(s.w, l.kernel.Data)
			s.cols = conv32(g, batch, s.act[cur], s.w, s.b, cout, y, s.cols)
		}
		cur = 1 - cur
	}
	out := s.act[cur]
	_, h := t.push(opLeaf, batch, len(out)/batch, nil, nil, nil)
	widen(h.Data, out)
	return h
}

// wholeConv32 is conv32 for a kernel that covers each image (ConvGeom.whole)
// with the kernel's weights in float64: a dense layer on the flattened
// images.
func wholeConv32(batch int, x []float32, kernel []float64, bias []float32, k, cout int, y []float32) {
	for i := 0; i < batch; i++ {
		copy(y[i*cout:(i+1)*cout], bias)
	}
	gemm32d(batch, cout, k, x, k, kernel, cout, y, cout, true)
}

// conv32 is Conv2DRelu in float32 without gradients: the batch x (H·W·Cin
// values per image) convolved with kernel [patch × cout], plus bias, ReLU,
// into y [batch × OH·OW·cout]. It unfolds a few images at a time into cols
// (grown as needed and returned), as the float64 path does, and for a
// kernel covering each image multiplies the images directly.
func conv32(g ConvGeom, batch int, x, kernel, bias []float32, cout int, y, cols []float32) []float32 {
	k, pos := g.patch(), g.OH*g.OW
	step := batch
	if !g.whole() {
		step = g.chunkImages(batch)
		cols = grow32(cols, step*pos*k)
	}
	for b0 := 0; b0 < batch; b0 += step {
		b1 := min(b0+step, batch)
		rows := (b1 - b0) * pos
		o := y[b0*pos*cout : b1*pos*cout]
		for i := 0; i < rows; i++ {
			copy(o[i*cout:(i+1)*cout], bias)
		}
		a := x[b0*k : b1*k]
		if !g.whole() {
			a = cols[:rows*k]
			im2col(g, x, b0, b1, a)
		}
		gemm32(rows, cout, k, a, k, kernel, cout, o, cout, true)
	}
	return cols
}
