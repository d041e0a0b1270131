package models

// The backward passes of the operations in ops.go: each node adds its
// contribution to its inputs' gradients.

// backward adds this node's contribution to its inputs' gradients.
func (nd *node) backward() {
	out, a, b := nd.out, nd.a, nd.b
	g := out.Grad
	switch nd.op {
	case opMatMul, opLinear:
		m, k, n := a.Rows, a.Cols, b.Cols
		if a.Grad != nil { // dA += dC·Bᵀ
			gemm(false, true, m, k, n, g, n, b.Data, n, nd.beta(slotA), a.Grad, k, &nd.scratch)
		}
		nd.productBackwardRest()
	case opAdd, opSub, opMul, opDiv, opMin, opMax:
		nd.binaryBackward()
	case opConv:
		nd.convBackward()
	case opConv32:
		nd.conv32Backward()
	case opLSTM:
		nd.lstmBackward()
	case opAddScalar, opScale, opTanh, opRelu, opSigmoid, opExp, opLog, opSquare, opSqrt, opAbs, opClip, opHuber:
		nd.unaryBackward()
	case opSum, opMean:
		if a.Grad != nil {
			d := g[0]
			if nd.op == opMean {
				d *= nd.s1
			}
			for k := range a.Grad[:a.Len()] {
				a.Grad[k] += d
			}
		}
	case opRowSum, opRowMean:
		if a.Grad != nil {
			for i := 0; i < a.Rows; i++ {
				d := g[i]
				if nd.op == opRowMean {
					d *= nd.s1
				}
				ag := a.Grad[i*a.Cols : (i+1)*a.Cols]
				for j := range ag {
					ag[j] += d
				}
			}
		}
	case opRowMax, opGather:
		if a.Grad != nil {
			for i, j := range nd.ints {
				a.Grad[i*a.Cols+j] += g[i]
			}
		}
	case opLogSoftmax: // dx = dy - softmax·Σdy
		if a.Grad != nil {
			p := nd.aux[:out.Len()]
			expSlice(p, out.Data[:out.Len()]) // the softmax
			// Rows of two: one loop, as in the forward pass.
			if out.Cols == 2 {
				ag := a.Grad[:len(p)]
				for i := 0; i+1 < len(p); i += 2 {
					s := g[i] + g[i+1]
					ag[i] += g[i] - p[i]*s
					ag[i+1] += g[i+1] - p[i+1]*s
				}
				break
			}
			for i := 0; i < a.Rows; i++ {
				gy, ag := g[i*out.Cols:(i+1)*out.Cols], a.Grad[i*a.Cols:(i+1)*a.Cols]
				s := 0.0
				for _, v := range gy {
					s += v
				}
				for j, pj := range p[i*out.Cols : (i+1)*out.Cols] {
					ag[j] += gy[j] - pj*s
				}
			}
		}
	case opSoftmax: // dx = y·(dy - Σ dy·y)
		if a.Grad != nil {
			for i := 0; i < a.Rows; i++ {
				y, gy, ag := out.Row(i), g[i*out.Cols:(i+1)*out.Cols], a.Grad[i*a.Cols:(i+1)*a.Cols]
				s := 0.0
				for j, v := range gy {
					s += v * y[j]
				}
				for j := range ag {
					ag[j] += y[j] * (gy[j] - s)
				}
			}
		}
	case opConcat:
		for i := 0; i < out.Rows; i++ {
			gr := g[i*out.Cols : (i+1)*out.Cols]
			if a.Grad != nil {
				addTo(a.Grad[i*a.Cols:(i+1)*a.Cols], gr[:a.Cols])
			}
			if b.Grad != nil {
				addTo(b.Grad[i*b.Cols:(i+1)*b.Cols], gr[a.Cols:])
			}
		}
	case opCols:
		if a.Grad != nil {
			for i := 0; i < out.Rows; i++ {
				addTo(a.Grad[i*a.Cols+nd.i1:i*a.Cols+nd.i1+out.Cols], g[i*out.Cols:(i+1)*out.Cols])
			}
		}
	case opRepeatRows:
		if a.Grad != nil {
			for i := 0; i < out.Rows; i++ {
				addTo(a.Grad[:a.Cols], g[i*out.Cols:(i+1)*out.Cols])
			}
		}
	}
}

func addTo(dst, src []float64) {
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += v
	}
}

func (nd *node) binaryBackward() {
	out, a, b := nd.out, nd.a, nd.b
	r, c := out.Rows, out.Cols
	g := out.Grad
	if a.Rows == r && a.Cols == c && b.Rows == r && b.Cols == c {
		binaryBackwardSame(nd.op, g[:r*c], a.Data, b.Data, a.Grad, b.Grad)
		return
	}
	ars, acs := strides(a, r, c)
	brs, bcs := strides(b, r, c)
	ag, bg := a.Grad, b.Grad
	k := 0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			ia, ib := i*ars+j*acs, i*brs+j*bcs
			da, db := binaryPartials(nd.op, a.Data[ia], b.Data[ib])
			if ag != nil {
				ag[ia] += g[k] * da
			}
			if bg != nil {
				bg[ib] += g[k] * db
			}
			k++
		}
	}
}

// binaryBackwardSame is binaryBackward for operands of the output's shape
// (no broadcast), a loop per operation: the same products and sums, a
// partial of 0 or 1 included, without a call per value.
func binaryBackwardSame(op opcode, g, ad, bd, ag, bg []float64) {
	n := len(g)
	ad, bd = ad[:n], bd[:n]
	switch op {
	case opAdd, opSub:
		if ag != nil {
			addTo(ag[:n], g)
		}
		if bg != nil {
			bg = bg[:n]
			if op == opAdd {
				addTo(bg, g)
			} else {
				for k, v := range g {
					bg[k] += v * -1
				}
			}
		}
	case opMul:
		if ag != nil {
			ag = ag[:n]
			for k, v := range g {
				ag[k] += v * bd[k]
			}
		}
		if bg != nil {
			bg = bg[:n]
			for k, v := range g {
				bg[k] += v * ad[k]
			}
		}
	case opMin, opMax:
		// The partials are 1 for the operand taken (a on ties) and 0 for
		// the other, whose product with the gradient is still added, so
		// that a NaN or an infinity reaches both as it does elsewhere.
		for k, v := range g {
			da, db := 1.0, 0.0
			if op == opMin && bd[k] < ad[k] || op == opMax && bd[k] > ad[k] {
				da, db = 0, 1
			}
			if ag != nil {
				ag[k] += v * da
			}
			if bg != nil {
				bg[k] += v * db
			}
		}
	default:
		for k, v := range g {
			da, db := binaryPartials(op, ad[k], bd[k])
			if ag != nil {
				ag[k] += v * da
			}
			if bg != nil {
				bg[k] += v * db
			}
		}
	}
}

func (nd *node) unaryBackward() {
	x := nd.a
	if x.Grad == nil {
		return
	}
	n := x.Len()
	g, y, xd, xg := nd.out.Grad[:n], nd.out.Data[:n], x.Data[:n], x.Grad[:n]
	switch nd.op {
	case opAddScalar:
		addTo(xg, g)
	case opScale:
		for k, v := range g {
			xg[k] += v * nd.s1
		}
	case opTanh:
		done := 0
		if haveFMA {
			tanhGrad4(xg, g, y)
			done = n &^ 3
		}
		for k := done; k < n; k++ {
			xg[k] += g[k] * (1 - y[k]*y[k])
		}
	case opRelu:
		for k, v := range g {
			if xd[k] > 0 {
				xg[k] += v
			}
		}
	case opSigmoid:
		for k, v := range g {
			xg[k] += v * y[k] * (1 - y[k])
		}
	case opExp:
		for k, v := range g {
			xg[k] += v * y[k]
		}
	case opLog:
		for k, v := range g {
			xg[k] += v / xd[k]
		}
	case opSquare:
		for k, v := range g {
			xg[k] += 2 * v * xd[k]
		}
	case opSqrt:
		for k, v := range g {
			xg[k] += 0.5 * v / y[k]
		}
	case opAbs:
		for k, v := range g {
			switch {
			case xd[k] > 0:
				xg[k] += v
			case xd[k] < 0:
				xg[k] -= v
			}
		}
	case opClip:
		for k, v := range g {
			if xd[k] > nd.s1 && xd[k] < nd.s2 {
				xg[k] += v
			}
		}
	case opHuber:
		d := nd.s1
		for k, v := range g {
			e := xd[k]
			switch {
			case e > d:
				xg[k] += v * d
			case e < -d:
				xg[k] -= v * d
			default:
				xg[k] += v * e
			}
		}
	}
}
