package models

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Tape records operations for reverse-mode differentiation and owns the
// buffers of their results.
//
// A training step calls Reset, runs the forward pass and the loss through
// the tape's operations, then Backward. The tape keeps one slot per
// operation and reuses the slot's buffers when the same sequence of
// operations runs again, so after the first step the hot path allocates
// nothing. Slots grow to the largest batch seen and serve smaller ones.
//
// Shape mistakes (multiplying [2x3] by [4x5]) are programming errors and
// panic with a message naming the operation and both shapes.
//
// A Tape is not safe for concurrent use; give each goroutine its own.
type Tape struct {
	nodes  []*node
	n      int
	noGrad bool
	err    error
	f32    *scratch32  // the float32 inference path's buffers (conv32.go)
	tr     *Transposes // weights' transposes shared with other tapes, or nil
	seen   []bool      // BackwardSet: which parameters a node has claimed
	// lazy is set after a BackwardSet: results' gradients are no longer
	// cleared when the forward pass records them, but marked stale, and
	// cleared or written when a backward pass first needs them.
	lazy bool
}

// NewTape returns an empty tape.
func NewTape() *Tape { return &Tape{} }

// Reset forgets the recorded operations; their tensors' buffers are reused
// by the next operations.
func (t *Tape) Reset() { t.n, t.err = 0, nil }

// Err returns the first error an Apply operation reported since the last
// Reset. Check it after the forward pass and after Backward when the tape
// runs external functions.
func (t *Tape) Err() error { return t.err }

// SetNoGrad switches gradient recording off (true) or on (false). With it
// off no result requires a gradient, so forward passes for acting skip the
// gradient buffers; Backward then has nothing to do.
func (t *Tape) SetNoGrad(off bool) { t.noGrad = off }

// Len is the number of operations recorded since the last Reset.
func (t *Tape) Len() int { return t.n }

type opcode uint8

const (
	opLeaf opcode = iota
	opMatMul
	opLinear
	opAdd
	opSub
	opMul
	opDiv
	opMin
	opMax
	opAddScalar
	opScale
	opTanh
	opRelu
	opSigmoid
	opExp
	opLog
	opSquare
	opSqrt
	opAbs
	opClip
	opHuber
	opSum
	opMean
	opRowSum
	opRowMean
	opRowMax
	opLogSoftmax
	opSoftmax
	opGather
	opConcat
	opCols
	opRepeatRows
	opFunc
	opConv
	opConv32
	opLSTM
)

// node is one recorded operation: its inputs, scalar arguments, result and
// the buffers it owns across steps.
type node struct {
	op      opcode
	a, b, c *Tensor
	d       *Tensor // a fourth input (LSTM's initial cell state)
	s1, s2  float64
	i1      int
	out     *Tensor
	data    []float64
	grad    []float64
	ints    []int
	fn      Func
	conv    ConvGeom
	aux     []float64    // Conv2D's unfolded patches
	aux2    []float64    // Conv2D's patch gradients
	aux3    []float64    // LSTM's gate gradients
	scratch []float64    // gemm's workspace: transposed weights, a column
	c32     *convTrain32 // the float32 convolutions' state (conv32train.go)
	set     uint8        // BackwardSet: input slots whose gradient backward writes (firstwrite.go)
	clears  []*Tensor    // BackwardSet: gradients to clear before backward adds to them
	stale   bool         // out.Grad holds old values (a lazy tape)
	claimed bool         // BackwardSet: a later node writes or clears out.Grad
}

// push takes the next slot and shapes its result; the result needs a
// gradient when any input does and recording is on.
func (t *Tape) push(op opcode, rows, cols int, a, b, c *Tensor) (*node, *Tensor) {
	return t.pushData(op, rows, cols, a, b, c, nil)
}

// pushData is push with the result viewing view instead of the slot's own
// buffer when view is non-nil (Const, StopGradient), so large inputs are
// never copied or duplicated.
func (t *Tape) pushData(op opcode, rows, cols int, a, b, c *Tensor, view []float64) (*node, *Tensor) {
	if t.n == len(t.nodes) {
		t.nodes = append(t.nodes, &node{out: &Tensor{}})
	}
	nd := t.nodes[t.n]
	t.n++
	nd.op, nd.a, nd.b, nd.c, nd.d = op, a, b, c, nil
	nd.set, nd.clears, nd.stale = 0, nd.clears[:0], false
	need := !t.noGrad && (a != nil && a.Grad != nil || b != nil && b.Grad != nil || c != nil && c.Grad != nil)
	n := rows * cols
	out := nd.out
	out.Rows, out.Cols = rows, cols
	if view != nil {
		out.Data = view[:n]
	} else {
		if cap(nd.data) < n {
			nd.data = make([]float64, n)
		}
		out.Data = nd.data[:n]
	}
	if need {
		if cap(nd.grad) < n {
			nd.grad = make([]float64, n)
		}
		out.Grad = nd.grad[:n]
		if t.lazy {
			nd.stale = true
		} else {
			clear(out.Grad)
		}
	} else {
		out.Grad = nil
	}
	return nd, out
}

// Const records a constant rows×cols input (observations, actions,
// advantages). It views data without copying, so data must stay unchanged
// until the tape is reset; with data nil the tensor is zero-filled.
func (t *Tape) Const(rows, cols int, data []float64) *Tensor {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("models: Const with shape [%dx%d]", rows, cols))
	}
	if data != nil {
		if len(data) < rows*cols {
			panic(fmt.Sprintf("models: Const [%dx%d] needs %d values, got %d", rows, cols, rows*cols, len(data)))
		}
		_, out := t.pushData(opLeaf, rows, cols, nil, nil, nil, data)
		return out
	}
	_, out := t.push(opLeaf, rows, cols, nil, nil, nil)
	clear(out.Data)
	return out
}

// Variable records an input whose gradient is wanted (a model plugin's
// input gradients, a distribution's gradients with respect to its inputs):
// like Const, it views data, but Backward accumulates into its Grad, which
// the tape owns and zeroes here.
func (t *Tape) Variable(rows, cols int, data []float64) *Tensor {
	out := t.Const(rows, cols, data)
	nd := t.nodes[t.n-1]
	n := rows * cols
	if cap(nd.grad) < n {
		nd.grad = make([]float64, n)
	}
	out.Grad = nd.grad[:n]
	clear(out.Grad)
	return out
}

// StopGradient returns x's values as a constant: backpropagation does not
// pass through it. The result views x's data.
func (t *Tape) StopGradient(x *Tensor) *Tensor {
	_, out := t.pushData(opLeaf, x.Rows, x.Cols, nil, nil, nil, x.Data[:x.Len()])
	return out
}

// Backward backpropagates from the 1×1 tensor loss, accumulating
// d(loss)/d(p) into the Grad of every parameter p that loss depends on. Run
// it once per forward pass (intermediate gradients are not cleared after);
// clear parameter gradients between steps with Params.ZeroGrad, or use
// BackwardSet, which writes them.
func (t *Tape) Backward(loss *Tensor) {
	checkLoss(loss)
	if loss.Grad == nil {
		return // nothing trainable reaches the loss
	}
	t.clearStale()
	loss.Grad[0] += 1
	t.backprop(t.n - 1)
}

// checkLoss panics unless loss is 1×1.
func checkLoss(loss *Tensor) {
	if loss.Rows != 1 || loss.Cols != 1 {
		panic(fmt.Sprintf("models: Backward from a %s tensor; reduce the loss to 1x1 first (Sum or Mean)", loss.shape()))
	}
}

// BackwardFrom backpropagates given output gradients: grad[i] is
// d(loss)/d(out.Data[i]) for some loss computed outside the tape (a remote
// learner's, for instance). It accumulates parameter gradients like
// Backward. For several outputs at once (policy and value), call AddGrad
// for each, then Propagate once.
func (t *Tape) BackwardFrom(out *Tensor, grad []float64) error {
	if err := t.AddGrad(out, grad); err != nil {
		return err
	}
	t.Propagate()
	return nil
}

// AddGrad adds grad to out's gradient without propagating it; see
// BackwardFrom.
func (t *Tape) AddGrad(out *Tensor, grad []float64) error {
	if len(grad) != out.Len() {
		return fmt.Errorf("models: %d output gradients for a %s output", len(grad), out.shape())
	}
	if out.Grad == nil {
		return nil // nothing trainable produced out
	}
	t.clearStale()
	for i, g := range grad {
		out.Grad[i] += g
	}
	return nil
}

// Propagate backpropagates the gradients added with AddGrad into the
// parameters. Run it once per forward pass.
func (t *Tape) Propagate() {
	t.clearStale()
	t.backprop(t.n - 1)
}

// clearStale clears the results' gradients a lazy tape left stale.
func (t *Tape) clearStale() {
	for _, nd := range t.nodes[:t.n] {
		if nd.stale {
			clear(nd.out.Grad)
			nd.stale = false
		}
	}
}

// backprop runs the backward passes of nodes from down to 0.
func (t *Tape) backprop(from int) {
	for i := from; i >= 0; i-- {
		nd := t.nodes[i]
		for _, x := range nd.clears {
			clear(x.Grad[:x.Len()])
		}
		switch {
		case nd.out.Grad == nil || nd.op == opLeaf:
		case nd.op == opFunc:
			var wg []float64
			if nd.b != nil {
				wg = nd.b.Grad
			}
			if err := nd.fn.Backward(nd.a, nd.b, nd.out, nd.out.Grad, nd.a.Grad, wg); err != nil && t.err == nil {
				t.err = fmt.Errorf("models: backward of an external function: %w", err)
			}
		case t.tr != nil && (nd.op == opLinear || nd.op == opMatMul) && nd.a.Grad != nil &&
			!fewRowsCheaper(nd.a.Rows, nd.a.Cols, nd.b.Cols):
			nd.backwardShared(t.transposedWeight(nd.b))
		default:
			nd.backward()
		}
	}
}

// Func is a differentiable operation computed outside the tape, such as a
// model served by a plugin process. Its weights w are a tensor on this side
// (a Params tensor mirroring the remote weights, so optimizers and flat
// weight shipping work as for local models), or nil.
type Func interface {
	// Forward writes the output for inputs x and weights w into out, whose
	// shape Apply has set.
	Forward(x, w, out *Tensor) error
	// Backward adds d(Σ outGrad·out)/dx into xGrad and d(...)/dw into
	// wGrad; either is nil when that gradient is not needed.
	Backward(x, w, out *Tensor, outGrad, xGrad, wGrad []float64) error
}

// Apply records f applied to x [batch×k] (and weights w) producing
// [batch×outCols]. An error from f zeroes the output and is reported by
// Err, because tape operations return tensors, not errors.
func (t *Tape) Apply(f Func, x, w *Tensor, outCols int) *Tensor {
	nd, out := t.push(opFunc, x.Rows, outCols, x, w, nil)
	nd.fn = f
	if err := f.Forward(x, w, out); err != nil {
		clear(out.Data)
		if t.err == nil {
			t.err = fmt.Errorf("models: external function: %w", err)
		}
	}
	return out
}

// gemm computes C = op(A)·op(B) + beta·C for beta 0 or 1, where op
// transposes when tA or tB is set. On CPUs with AVX2 and FMA it runs the
// package's register-blocked assembly kernel (transposing B into scratch
// first when tB, so the kernel always streams rows of B); elsewhere it uses
// gonum's BLAS. With beta 0 the AVX-512 kernels write C without reading it;
// the other paths clear C and add, which gives the same bits.
func gemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int, scratch *[]float64) {
	if !haveFMA {
		gemmGonum(tA, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	fewRows := tB && !tA && fewRowsCheaper(m, n, k)
	set := beta == 0 && haveAVX512 && !fewRows
	if beta == 0 && !set {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	if fewRows {
		gemmFewRows(m, n, k, a, lda, b, ldb, c, ldc, scratch)
		return
	}
	need := max(k, m)
	if tB {
		need += k * n
	}
	if cap(*scratch) < need {
		*scratch = make([]float64, need)
	}
	buf := (*scratch)[:need]
	if tB {
		bt := buf[:k*n]
		transpose(b, n, k, ldb, bt)
		b, ldb, buf = bt, n, buf[k*n:]
	}
	if haveAVX512 {
		gemmAcc512(tA, m, n, k, a, lda, b, ldb, c, ldc, set)
		return
	}
	gemmAcc(tA, m, n, k, a, lda, b, ldb, c, ldc, buf)
}

// gemmAcc adds op(A)·B to C with the assembly kernels: 4×8 blocks of C,
// then leftover rows 1×8, then leftover columns (the small output layers
// of policy and value heads) by dot products or, when A is transposed,
// by the 1×8 kernel over C's column. tmp holds max(k, m) values.
func gemmAcc(tA bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, tmp []float64) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	ars, aks := lda, 1
	if tA {
		ars, aks = 1, lda
	}
	// The kernels do not check bounds, so check the farthest reads here.
	if (m-1)*ars+(k-1)*aks >= len(a) || (k-1)*ldb+n > len(b) || (m-1)*ldc+n > len(c) || len(tmp) < max(k, m) {
		panic(fmt.Sprintf("models: gemm %dx%dx%d: operands too short (%d, %d, %d, %d)", m, n, k, len(a), len(b), len(c), len(tmp)))
	}
	n8, m4 := n&^7, m&^3
	for j := 0; j < n8; j += 8 {
		for i := 0; i < m4; i += 4 {
			kern4x8(k, &a[i*ars], ars, aks, &b[j], ldb, &c[i*ldc+j], ldc)
		}
		for i := m4; i < m; i++ {
			kern1x8(k, &a[i*ars], aks, &b[j], ldb, &c[i*ldc+j])
		}
	}
	for j := n8; j < n; j++ {
		if !tA {
			col := tmp[:k]
			for l := range col {
				col[l] = b[l*ldb+j]
			}
			for i := 0; i < m; i++ {
				c[i*ldc+j] += dot(a[i*lda:i*lda+k], col)
			}
			continue
		}
		// C[:, j] = Σ_l B[l, j]·A[l, :], A's rows being contiguous.
		acc := tmp[:m]
		clear(acc)
		m8 := m &^ 7
		for i := 0; i < m8; i += 8 {
			kern1x8(k, &b[j], ldb, &a[i], lda, &acc[i])
		}
		for i := m8; i < m; i++ {
			s := 0.0
			for l := 0; l < k; l++ {
				s += b[l*ldb+j] * a[l*lda+i]
			}
			acc[i] = s
		}
		for i, v := range acc {
			c[i*ldc+j] += v
		}
	}
}

// dot is x·y with four accumulators.
func dot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// gemmGonum is gemm through gonum's BLAS. It tiles C so that gonum always
// takes its serial path: its parallel path starts goroutines per call,
// which allocates and, on the small matrices RL uses, costs more than it
// saves.
func gemmGonum(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	const mb, nb = 192, 64 // 3×1 gonum blocks: below its parallel threshold of 4
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	var impl gonum.Implementation
	if m <= mb && n <= nb {
		impl.Dgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	for i0 := 0; i0 < m; i0 += mb {
		mi := min(mb, m-i0)
		var as []float64
		if tA {
			as = a[i0:]
		} else {
			as = a[i0*lda:]
		}
		for j0 := 0; j0 < n; j0 += nb {
			nj := min(nb, n-j0)
			var bs []float64
			if tB {
				bs = b[j0*ldb:]
			} else {
				bs = b[j0:]
			}
			impl.Dgemm(ta, tb, mi, nj, k, 1, as, lda, bs, ldb, beta, c[i0*ldc+j0:], ldc)
		}
	}
}
