package models

import (
	"fmt"
	"math/rand/v2"
)

// LSTM records a long short-term memory layer run over a batch of
// sequences, all steps in one operation.
//
// xw [T·B×4H] holds the input projections x·Wx + b of every step, time-
// major: rows t·B to t·B+B-1 are step t of the B sequences. The four
// column blocks of width H are the input, forget, cell and output gates'.
// wh [H×4H] is the recurrent weight matrix and h0, c0 [B×H] the state
// before the first step. The result [T·B×H] is the hidden state after each
// step, in the same time-major layout.
//
// When cLast is non-nil (len ≥ B·H) it receives the cell state after the
// last step; the last B rows of the result are the hidden state. Together
// they are the state a rollout carries to the next call.
//
// Backward runs backpropagation through time over the T steps, into xw,
// wh, h0 and c0 (whichever need gradients); each step's recurrent product
// goes through the package's matrix kernel.
func (t *Tape) LSTM(xw, wh, h0, c0 *Tensor, cLast []float64) *Tensor {
	hid := wh.Rows
	b := h0.Rows
	switch {
	case wh.Cols != 4*hid:
		panic(fmt.Sprintf("models: LSTM recurrent weights %s; they must be [Hx4H]", wh.shape()))
	case xw.Cols != 4*hid:
		panic(fmt.Sprintf("models: LSTM input projections %s do not match recurrent weights %s; they must be [T·Bx%d]", xw.shape(), wh.shape(), 4*hid))
	case h0.Cols != hid || c0.Rows != b || c0.Cols != hid:
		panic(fmt.Sprintf("models: LSTM initial state %s and %s; both must be [Bx%d]", h0.shape(), c0.shape(), hid))
	case b == 0 || xw.Rows%b != 0:
		panic(fmt.Sprintf("models: LSTM input projections %s: rows must be a multiple of the batch %d", xw.shape(), b))
	case cLast != nil && len(cLast) < b*hid:
		panic(fmt.Sprintf("models: LSTM final cell buffer holds %d values, needs %d", len(cLast), b*hid))
	}
	steps := xw.Rows / b
	nd, out := t.push(opLSTM, steps*b, hid, xw, wh, h0)
	nd.d = c0
	if nd.d.Grad != nil && !t.noGrad && out.Grad == nil {
		// The op needs a gradient when only c0 does.
		if cap(nd.grad) < out.Len() {
			nd.grad = make([]float64, out.Len())
		}
		out.Grad = nd.grad[:out.Len()]
		clear(out.Grad)
	}
	// aux: activated gates [T·B×4H]; aux2: cell states [T·B×H], then
	// their tanh [T·B×H].
	n := steps * b * hid
	nd.aux = grow(nd.aux, 4*n)
	nd.aux2 = grow(nd.aux2, 2*n)
	copy(nd.aux, xw.Data[:steps*b*4*hid])
	g4 := 4 * hid
	for s := 0; s < steps; s++ {
		gates := nd.aux[s*b*g4 : (s+1)*b*g4]
		hPrev, cPrev := h0.Data[:b*hid], c0.Data[:b*hid]
		if s > 0 {
			hPrev, cPrev = out.Data[(s-1)*b*hid:s*b*hid], nd.aux2[(s-1)*b*hid:s*b*hid]
		}
		gemm(false, false, b, g4, hid, hPrev, hid, wh.Data, g4, 1, gates, g4, &nd.scratch)
		cell, tcell := nd.aux2[s*b*hid:(s+1)*b*hid], nd.aux2[n+s*b*hid:n+(s+1)*b*hid]
		h := out.Data[s*b*hid : (s+1)*b*hid]
		for r := 0; r < b; r++ {
			row := gates[r*g4 : (r+1)*g4]
			lstmActivate(row, hid)
			i, f, g, o := row[:hid], row[hid:2*hid], row[2*hid:3*hid], row[3*hid:]
			cr, cp := cell[r*hid:(r+1)*hid], cPrev[r*hid:(r+1)*hid]
			tc, hr := tcell[r*hid:(r+1)*hid], h[r*hid:(r+1)*hid]
			for j := range cr {
				cr[j] = f[j]*cp[j] + i[j]*g[j]
			}
			tanhSlice(tc, cr)
			for j := range hr {
				hr[j] = o[j] * tc[j]
			}
		}
	}
	if cLast != nil {
		copy(cLast, nd.aux2[(steps-1)*b*hid:steps*b*hid])
	}
	return out
}

// lstmActivate applies the gate nonlinearities to one row of
// pre-activations [i f g o]: sigmoid on i, f and o, tanh on g. The
// sigmoids use σ(x) = (1 + tanh(x/2))/2 so the whole row goes through the
// vectorised tanh once.
func lstmActivate(row []float64, hid int) {
	for j := range row {
		row[j] *= 0.5
	}
	g := row[2*hid : 3*hid]
	for j := range g {
		g[j] *= 2
	}
	tanhSlice(row, row)
	for _, part := range [][]float64{row[:2*hid], row[3*hid:]} {
		for j, v := range part {
			part[j] = 0.5 + 0.5*v
		}
	}
}

// lstmBackward backpropagates through the recorded steps in reverse. aux3
// holds the pre-activation gradients of every step [T·B×4H], then the
// running hidden and cell gradients [B×H] each, then Whᵀ [4H×H],
// transposed once rather than by every step's product.
func (nd *node) lstmBackward() {
	out, xw, wh, h0, c0 := nd.out, nd.a, nd.b, nd.c, nd.d
	hid, b := wh.Rows, h0.Rows
	steps, g4 := out.Rows/b, 4*hid
	na := steps * b * g4
	nd.aux3 = grow(nd.aux3, na+2*b*hid+g4*hid)
	dA := nd.aux3[:na]
	dhNext := nd.aux3[na : na+b*hid]
	dcNext := nd.aux3[na+b*hid : na+2*b*hid]
	whT := nd.aux3[na+2*b*hid:]
	for i := 0; i < hid; i++ {
		for j, v := range wh.Data[i*g4 : (i+1)*g4] {
			whT[j*hid+i] = v
		}
	}
	clear(dhNext)
	clear(dcNext)
	for s := steps - 1; s >= 0; s-- {
		gates, da := nd.aux[s*b*g4:(s+1)*b*g4], dA[s*b*g4:(s+1)*b*g4]
		n := steps * b * hid
		tcell, gh := nd.aux2[n+s*b*hid:n+(s+1)*b*hid], out.Grad[s*b*hid:(s+1)*b*hid]
		cPrev := c0.Data[:b*hid]
		if s > 0 {
			cPrev = nd.aux2[(s-1)*b*hid : s*b*hid]
		}
		for r := 0; r < b; r++ {
			row, drow := gates[r*g4:(r+1)*g4], da[r*g4:(r+1)*g4]
			i, f, g, o := row[:hid], row[hid:2*hid], row[2*hid:3*hid], row[3*hid:]
			di, df, dg, do := drow[:hid], drow[hid:2*hid], drow[2*hid:3*hid], drow[3*hid:]
			off := r * hid
			for j := 0; j < hid; j++ {
				dh := gh[off+j] + dhNext[off+j]
				tc := tcell[off+j]
				dc := dh*o[j]*(1-tc*tc) + dcNext[off+j]
				do[j] = dh * tc * o[j] * (1 - o[j])
				di[j] = dc * g[j] * i[j] * (1 - i[j])
				df[j] = dc * cPrev[off+j] * f[j] * (1 - f[j])
				dg[j] = dc * i[j] * (1 - g[j]*g[j])
				dcNext[off+j] = dc * f[j]
			}
		}
		// dh_{s-1} = dA_s·Whᵀ.
		gemm(false, false, b, hid, g4, da, g4, whT, hid, 0, dhNext, hid, &nd.scratch)
	}
	if xw.Grad != nil {
		addTo(xw.Grad[:len(dA)], dA)
	}
	if wh.Grad != nil { // dWh += h0ᵀ·dA_0 + Σ_{s≥1} h_{s-1}ᵀ·dA_s
		gemm(true, false, hid, g4, b, h0.Data, hid, dA[:b*g4], g4, 1, wh.Grad, g4, &nd.scratch)
		if steps > 1 {
			gemm(true, false, hid, g4, (steps-1)*b, out.Data, hid, dA[b*g4:], g4, 1, wh.Grad, g4, &nd.scratch)
		}
	}
	if h0.Grad != nil {
		addTo(h0.Grad[:b*hid], dhNext)
	}
	if c0.Grad != nil {
		addTo(c0.Grad[:b*hid], dcNext)
	}
}

// LSTMLayer is a long short-term memory layer with input weights Wx
// [in×4H], recurrent weights Wh [H×4H] and bias B [1×4H], gates ordered
// input, forget, cell, output.
type LSTMLayer struct {
	Wx, Wh, B *Tensor
	// Hidden is the cell size H.
	Hidden int
}

// NewLSTMLayer adds an LSTM layer's weights ("name/wx", "name/wh",
// "name/b") to p and initialises them from rng: orthogonal input and
// recurrent weights, zero biases but 1 for the forget gate, so that
// early in training the cell keeps what it holds.
func NewLSTMLayer(p *Params, name string, in, hidden int, rng *rand.Rand) *LSTMLayer {
	l := &LSTMLayer{
		Wx: p.New(name+"/wx", in, 4*hidden), Wh: p.New(name+"/wh", hidden, 4*hidden),
		B: p.New(name+"/b", 1, 4*hidden), Hidden: hidden,
	}
	InitOrthogonal(l.Wx, 1, rng)
	InitOrthogonal(l.Wh, 1, rng)
	for j := hidden; j < 2*hidden; j++ {
		l.B.Data[j] = 1
	}
	return l
}

// Forward runs the layer over x [T·B×in] (time-major, see Tape.LSTM) from
// the state h0, c0 [B×H]; cLast, when non-nil, receives the final cell
// state. The input projection of all steps is one matrix product.
func (l *LSTMLayer) Forward(t *Tape, x, h0, c0 *Tensor, cLast []float64) *Tensor {
	return t.LSTM(t.Linear(x, l.Wx, l.B), l.Wh, h0, c0, cLast)
}
