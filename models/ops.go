package models

import (
	"fmt"
	"math"
)

// MatMul returns a·b for a [m×k] and b [k×n].
func (t *Tape) MatMul(a, b *Tensor) *Tensor {
	if a.Cols != b.Rows {
		panic(fmt.Sprintf("models: MatMul %s x %s: inner sizes differ", a.shape(), b.shape()))
	}
	nd, out := t.push(opMatMul, a.Rows, b.Cols, a, b, nil)
	gemm(false, false, a.Rows, b.Cols, a.Cols, a.Data, a.Cols, b.Data, b.Cols, 0, out.Data, out.Cols, &nd.scratch)
	return out
}

// Linear returns x·w + bias for x [m×k], w [k×n] and bias [1×n] (bias may
// be nil): a fully connected layer in one operation.
func (t *Tape) Linear(x, w, bias *Tensor) *Tensor {
	if x.Cols != w.Rows {
		panic(fmt.Sprintf("models: Linear %s x %s: inner sizes differ", x.shape(), w.shape()))
	}
	if bias != nil && (bias.Rows != 1 || bias.Cols != w.Cols) {
		panic(fmt.Sprintf("models: Linear bias %s does not match weights %s; it must be [1x%d]", bias.shape(), w.shape(), w.Cols))
	}
	nd, out := t.push(opLinear, x.Rows, w.Cols, x, w, bias)
	n := w.Cols
	beta := 0.0
	if bias != nil {
		for i := 0; i < x.Rows; i++ {
			copy(out.Data[i*n:(i+1)*n], bias.Data)
		}
		beta = 1
	}
	gemm(false, false, x.Rows, n, x.Cols, x.Data, x.Cols, w.Data, n, beta, out.Data, n, &nd.scratch)
	return out
}

// broadcastShape returns the result shape of a binary elementwise
// operation: each dimension of a and b must be equal or 1.
func broadcastShape(name string, a, b *Tensor) (int, int) {
	r, c := max(a.Rows, b.Rows), max(a.Cols, b.Cols)
	if (a.Rows != r && a.Rows != 1) || (b.Rows != r && b.Rows != 1) ||
		(a.Cols != c && a.Cols != 1) || (b.Cols != c && b.Cols != 1) {
		panic(fmt.Sprintf("models: %s %s and %s: shapes do not broadcast (each size must match or be 1)", name, a.shape(), b.shape()))
	}
	return r, c
}

// strides returns the row and column steps that read x broadcast to r×c.
func strides(x *Tensor, r, c int) (int, int) {
	rs, cs := x.Cols, 1
	if x.Rows == 1 && r > 1 {
		rs = 0
	}
	if x.Cols == 1 && c > 1 {
		cs = 0
		if rs != 0 {
			rs = 1
		}
	}
	return rs, cs
}

func (t *Tape) binary(op opcode, name string, a, b *Tensor) *Tensor {
	r, c := broadcastShape(name, a, b)
	_, out := t.push(op, r, c, a, b, nil)
	o, ad, bd := out.Data, a.Data, b.Data
	if a.Rows == r && a.Cols == c && b.Rows == r && b.Cols == c {
		ad, bd = ad[:len(o)], bd[:len(o)]
		switch op {
		case opAdd:
			for k := range o {
				o[k] = ad[k] + bd[k]
			}
		case opSub:
			for k := range o {
				o[k] = ad[k] - bd[k]
			}
		case opMul:
			for k := range o {
				o[k] = ad[k] * bd[k]
			}
		default:
			for k := range o {
				o[k] = binop(op, ad[k], bd[k])
			}
		}
		return out
	}
	ars, acs := strides(a, r, c)
	brs, bcs := strides(b, r, c)
	k := 0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			o[k] = binop(op, ad[i*ars+j*acs], bd[i*brs+j*bcs])
			k++
		}
	}
	return out
}

func binop(op opcode, x, y float64) float64 {
	switch op {
	case opAdd:
		return x + y
	case opSub:
		return x - y
	case opMul:
		return x * y
	case opDiv:
		return x / y
	case opMin:
		if y < x {
			return y
		}
		return x
	default: // opMax
		if y > x {
			return y
		}
		return x
	}
}

// binaryPartials returns d(op)/dx and d(op)/dy.
func binaryPartials(op opcode, x, y float64) (float64, float64) {
	switch op {
	case opAdd:
		return 1, 1
	case opSub:
		return 1, -1
	case opMul:
		return y, x
	case opDiv:
		return 1 / y, -x / (y * y)
	case opMin:
		if y < x {
			return 0, 1
		}
		return 1, 0
	default: // opMax
		if y > x {
			return 0, 1
		}
		return 1, 0
	}
}

// Add returns a+b elementwise; a size-1 dimension of either broadcasts.
func (t *Tape) Add(a, b *Tensor) *Tensor { return t.binary(opAdd, "Add", a, b) }

// Sub returns a-b elementwise, broadcasting like Add.
func (t *Tape) Sub(a, b *Tensor) *Tensor { return t.binary(opSub, "Sub", a, b) }

// Mul returns a*b elementwise, broadcasting like Add.
func (t *Tape) Mul(a, b *Tensor) *Tensor { return t.binary(opMul, "Mul", a, b) }

// Div returns a/b elementwise, broadcasting like Add.
func (t *Tape) Div(a, b *Tensor) *Tensor { return t.binary(opDiv, "Div", a, b) }

// Minimum returns min(a, b) elementwise, broadcasting like Add; the
// gradient flows to the smaller operand (to a on ties), as PPO's clipped
// objective needs.
func (t *Tape) Minimum(a, b *Tensor) *Tensor { return t.binary(opMin, "Minimum", a, b) }

// Maximum returns max(a, b) elementwise, broadcasting like Add; the
// gradient flows to the larger operand (to a on ties).
func (t *Tape) Maximum(a, b *Tensor) *Tensor { return t.binary(opMax, "Maximum", a, b) }

func (t *Tape) unary(op opcode, x *Tensor, s1, s2 float64) *Tensor {
	nd, out := t.push(op, x.Rows, x.Cols, x, nil, nil)
	nd.s1, nd.s2 = s1, s2
	o, xd := out.Data, x.Data[:x.Len()]
	switch op {
	case opAddScalar:
		for k, v := range xd {
			o[k] = v + s1
		}
	case opScale:
		for k, v := range xd {
			o[k] = v * s1
		}
	case opTanh:
		tanhSlice(o, xd)
	case opRelu:
		for k, v := range xd {
			o[k] = max(v, 0)
		}
	case opSigmoid:
		for k, v := range xd {
			o[k] = 1 / (1 + math.Exp(-v))
		}
	case opExp:
		expSlice(o, xd)
	case opLog:
		for k, v := range xd {
			o[k] = math.Log(v)
		}
	case opSquare:
		for k, v := range xd {
			o[k] = v * v
		}
	case opSqrt:
		for k, v := range xd {
			o[k] = math.Sqrt(v)
		}
	case opAbs:
		for k, v := range xd {
			o[k] = math.Abs(v)
		}
	case opClip:
		for k, v := range xd {
			o[k] = min(max(v, s1), s2)
		}
	case opHuber:
		for k, v := range xd {
			if a := math.Abs(v); a <= s1 {
				o[k] = 0.5 * v * v
			} else {
				o[k] = s1 * (a - 0.5*s1)
			}
		}
	}
	return out
}

// AddScalar returns x+s.
func (t *Tape) AddScalar(x *Tensor, s float64) *Tensor { return t.unary(opAddScalar, x, s, 0) }

// Scale returns x*s.
func (t *Tape) Scale(x *Tensor, s float64) *Tensor { return t.unary(opScale, x, s, 0) }

// Neg returns -x.
func (t *Tape) Neg(x *Tensor) *Tensor { return t.unary(opScale, x, -1, 0) }

// Tanh returns tanh(x) elementwise.
func (t *Tape) Tanh(x *Tensor) *Tensor { return t.unary(opTanh, x, 0, 0) }

// Relu returns max(x, 0) elementwise.
func (t *Tape) Relu(x *Tensor) *Tensor { return t.unary(opRelu, x, 0, 0) }

// Sigmoid returns 1/(1+exp(-x)) elementwise.
func (t *Tape) Sigmoid(x *Tensor) *Tensor { return t.unary(opSigmoid, x, 0, 0) }

// Exp returns exp(x) elementwise.
//
// Like LogSoftmax, Exp of a tensor it already exponentiated since the last
// Reset returns the earlier result.
func (t *Tape) Exp(x *Tensor) *Tensor {
	if y := t.again(opExp, x); y != nil {
		return y
	}
	return t.unary(opExp, x, 0, 0)
}

// Log returns the natural logarithm of x elementwise.
func (t *Tape) Log(x *Tensor) *Tensor { return t.unary(opLog, x, 0, 0) }

// Square returns x² elementwise.
func (t *Tape) Square(x *Tensor) *Tensor { return t.unary(opSquare, x, 0, 0) }

// Sqrt returns √x elementwise.
func (t *Tape) Sqrt(x *Tensor) *Tensor { return t.unary(opSqrt, x, 0, 0) }

// Abs returns |x| elementwise (gradient sign(x), 0 at 0).
func (t *Tape) Abs(x *Tensor) *Tensor { return t.unary(opAbs, x, 0, 0) }

// Clip returns x clamped to [lo, hi]; the gradient is zero where x lies
// outside (lo, hi).
func (t *Tape) Clip(x *Tensor, lo, hi float64) *Tensor {
	if lo > hi {
		panic(fmt.Sprintf("models: Clip with lo %v > hi %v", lo, hi))
	}
	return t.unary(opClip, x, lo, hi)
}

// Huber returns the Huber loss of the errors x elementwise: x²/2 where
// |x| ≤ delta, delta·(|x| - delta/2) elsewhere.
func (t *Tape) Huber(x *Tensor, delta float64) *Tensor { return t.unary(opHuber, x, delta, 0) }

// Sum returns the sum of all elements as a 1×1 tensor.
func (t *Tape) Sum(x *Tensor) *Tensor {
	_, out := t.push(opSum, 1, 1, x, nil, nil)
	s := 0.0
	for _, v := range x.Data[:x.Len()] {
		s += v
	}
	out.Data[0] = s
	return out
}

// Mean returns the mean of all elements as a 1×1 tensor.
func (t *Tape) Mean(x *Tensor) *Tensor {
	nd, out := t.push(opMean, 1, 1, x, nil, nil)
	s := 0.0
	for _, v := range x.Data[:x.Len()] {
		s += v
	}
	nd.s1 = 1 / float64(x.Len())
	out.Data[0] = s * nd.s1
	return out
}

// RowSum returns each row's sum as an [m×1] tensor.
func (t *Tape) RowSum(x *Tensor) *Tensor {
	_, out := t.push(opRowSum, x.Rows, 1, x, nil, nil)
	for i := 0; i < x.Rows; i++ {
		s := 0.0
		for _, v := range x.Row(i) {
			s += v
		}
		out.Data[i] = s
	}
	return out
}

// RowMean returns each row's mean as an [m×1] tensor.
func (t *Tape) RowMean(x *Tensor) *Tensor {
	nd, out := t.push(opRowMean, x.Rows, 1, x, nil, nil)
	nd.s1 = 1 / float64(x.Cols)
	for i := 0; i < x.Rows; i++ {
		s := 0.0
		for _, v := range x.Row(i) {
			s += v
		}
		out.Data[i] = s * nd.s1
	}
	return out
}

// RowMax returns each row's maximum as an [m×1] tensor; the gradient flows
// to the first maximal element (DQN's max over actions).
func (t *Tape) RowMax(x *Tensor) *Tensor {
	nd, out := t.push(opRowMax, x.Rows, 1, x, nil, nil)
	if cap(nd.ints) < x.Rows {
		nd.ints = make([]int, x.Rows)
	}
	nd.ints = nd.ints[:x.Rows]
	for i := 0; i < x.Rows; i++ {
		row := x.Row(i)
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		nd.ints[i] = best
		out.Data[i] = row[best]
	}
	return out
}

// LogSoftmax returns log(softmax(x)) of each row, computed stably.
//
// The log-softmax of a tensor already recorded since the last Reset is
// the earlier result, not a new operation: a categorical distribution's
// log-likelihood, entropy and KL divergence each ask for the log-softmax
// of the same logits, and one pass, with one backward pass that takes
// the three gradients summed, costs a third of three.
func (t *Tape) LogSoftmax(x *Tensor) *Tensor {
	if y := t.again(opLogSoftmax, x); y != nil {
		return y
	}
	nd, out := t.push(opLogSoftmax, x.Rows, x.Cols, x, nil, nil)
	// Each row's values less its maximum, exponentiated all at once
	// (expSlice), then less the log of each row's sum (logSlice, all at
	// once too). The loops walk the flat data: rows are often two values
	// (a Categorical of two actions), and a loop per row cost more than
	// the arithmetic.
	c, o := x.Cols, out.Data
	xd := x.Data[:len(o)]
	nd.aux = grow(nd.aux, len(o)+x.Rows)
	e, lse := nd.aux[:len(o)], nd.aux[len(o):len(o)+x.Rows]
	if c == 2 {
		for i := 0; i+1 < len(o); i += 2 {
			m := rowShift(xd[i], xd[i+1])
			o[i], o[i+1] = xd[i]-m, xd[i+1]-m
		}
	} else {
		for i := 0; i < len(o); i += c {
			row, orow := xd[i:i+c:i+c], o[i:i+c:i+c]
			m := math.Inf(-1)
			for _, v := range row {
				if v > m {
					m = v
				}
			}
			m = rowShift(m, m)
			for j, v := range row {
				orow[j] = v - m
			}
		}
	}
	expSlice(e, o)
	if c == 2 {
		for i := range lse {
			lse[i] = e[2*i] + e[2*i+1]
		}
	} else {
		for i := range lse {
			sum := 0.0
			for _, v := range e[i*c : (i+1)*c] {
				sum += v
			}
			lse[i] = sum
		}
	}
	logSlice(lse, lse)
	for i := 0; i < len(o); i += c {
		l := lse[i/c]
		for j := i; j < i+c; j++ {
			o[j] -= l
		}
	}
	return out
}

// rowShift is what LogSoftmax subtracts from a row whose largest values
// are a and b: the larger, or 0 when it is infinite (no finite maximum:
// log Σ exp is then the maximum itself). A NaN in a row makes the row
// NaN whatever is subtracted.
func rowShift(a, b float64) float64 {
	m := a
	if b > a {
		m = b
	}
	if m > math.MaxFloat64 || m < -math.MaxFloat64 {
		return 0
	}
	return m
}

// Softmax returns softmax(x) of each row.
func (t *Tape) Softmax(x *Tensor) *Tensor {
	_, out := t.push(opSoftmax, x.Rows, x.Cols, x, nil, nil)
	for i := 0; i < x.Rows; i++ {
		row, o := x.Row(i), out.Row(i)
		lse := logSumExp(row)
		for j, v := range row {
			o[j] = math.Exp(v - lse)
		}
	}
	return out
}

// again returns the result of the operation op (one without parameters)
// on x recorded since the last Reset, or nil if there is none.
func (t *Tape) again(op opcode, x *Tensor) *Tensor {
	for _, nd := range t.nodes[:t.n] {
		if nd.op == op && nd.a == x {
			return nd.out
		}
	}
	return nil
}

func logSumExp(row []float64) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, v)
	}
	if math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// Gather returns x[i, idx[i]] for each row i as an [m×1] tensor: the
// log-probability of each chosen action, or the Q-value of each taken
// action. idx is [m×1] and holds integral column indices (actions as
// float64, the way environments carry them).
func (t *Tape) Gather(x, idx *Tensor) *Tensor {
	if idx.Rows != x.Rows || idx.Cols != 1 {
		panic(fmt.Sprintf("models: Gather from %s with indices %s; indices must be [%dx1]", x.shape(), idx.shape(), x.Rows))
	}
	nd, out := t.push(opGather, x.Rows, 1, x, nil, nil)
	if cap(nd.ints) < x.Rows {
		nd.ints = make([]int, x.Rows)
	}
	nd.ints = nd.ints[:x.Rows]
	for i := 0; i < x.Rows; i++ {
		v := idx.Data[i]
		j := int(v)
		if float64(j) != v || j < 0 || j >= x.Cols {
			panic(fmt.Sprintf("models: Gather: index %v in row %d is not an integer in [0, %d)", v, i, x.Cols))
		}
		nd.ints[i] = j
		out.Data[i] = x.Data[i*x.Cols+j]
	}
	return out
}

// Concat joins a [m×p] and b [m×q] side by side into [m×(p+q)].
func (t *Tape) Concat(a, b *Tensor) *Tensor {
	if a.Rows != b.Rows {
		panic(fmt.Sprintf("models: Concat %s and %s: row counts differ", a.shape(), b.shape()))
	}
	_, out := t.push(opConcat, a.Rows, a.Cols+b.Cols, a, b, nil)
	for i := 0; i < a.Rows; i++ {
		o := out.Row(i)
		copy(o, a.Row(i))
		copy(o[a.Cols:], b.Row(i))
	}
	return out
}

// Cols returns columns [from, to) of x as a new [m×(to-from)] tensor, e.g.
// the means and log standard deviations of a DiagGaussian's input.
func (t *Tape) Cols(x *Tensor, from, to int) *Tensor {
	if from < 0 || to > x.Cols || from >= to {
		panic(fmt.Sprintf("models: Cols [%d, %d) of %s is out of range", from, to, x.shape()))
	}
	nd, out := t.push(opCols, x.Rows, to-from, x, nil, nil)
	nd.i1 = from
	for i := 0; i < x.Rows; i++ {
		copy(out.Row(i), x.Data[i*x.Cols+from:i*x.Cols+to])
	}
	return out
}

// RepeatRows stacks rows copies of the one-row tensor x into [rows×n], such
// as a free log-std vector repeated for every observation of a batch.
func (t *Tape) RepeatRows(x *Tensor, rows int) *Tensor {
	if x.Rows != 1 {
		panic(fmt.Sprintf("models: RepeatRows of %s; it needs one row", x.shape()))
	}
	_, out := t.push(opRepeatRows, rows, x.Cols, x, nil, nil)
	for i := 0; i < rows; i++ {
		copy(out.Row(i), x.Data)
	}
	return out
}
