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
}

// NewTape returns an empty tape.
func NewTape() *Tape { return &Tape{} }

// Reset forgets the recorded operations; their tensors' buffers are reused
// by the next operations.
func (t *Tape) Reset() { t.n = 0 }

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
)

// node is one recorded operation: its inputs, scalar arguments, result and
// the buffers it owns across steps.
type node struct {
	op      opcode
	a, b, c *Tensor
	s1, s2  float64
	i1, i2  int
	out     *Tensor
	data    []float64
	grad    []float64
	ints    []int
	scratch []float64 // transposed weights for the backward pass
}

// push takes the next slot and shapes its result; the result needs a
// gradient when any input does and recording is on.
func (t *Tape) push(op opcode, rows, cols int, a, b, c *Tensor) (*node, *Tensor) {
	if t.n == len(t.nodes) {
		t.nodes = append(t.nodes, &node{out: &Tensor{}})
	}
	nd := t.nodes[t.n]
	t.n++
	nd.op, nd.a, nd.b, nd.c = op, a, b, c
	need := !t.noGrad && (a != nil && a.Grad != nil || b != nil && b.Grad != nil || c != nil && c.Grad != nil)
	n := rows * cols
	if cap(nd.data) < n {
		nd.data = make([]float64, n)
	}
	out := nd.out
	out.Rows, out.Cols = rows, cols
	out.Data = nd.data[:n]
	if need {
		if cap(nd.grad) < n {
			nd.grad = make([]float64, n)
		}
		out.Grad = nd.grad[:n]
		clear(out.Grad)
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
	nd, out := t.push(opLeaf, rows, cols, nil, nil, nil)
	if data != nil {
		if len(data) < rows*cols {
			panic(fmt.Sprintf("models: Const [%dx%d] needs %d values, got %d", rows, cols, rows*cols, len(data)))
		}
		out.Data = data[:rows*cols]
	} else {
		clear(nd.data[:rows*cols])
	}
	return out
}

// StopGradient returns x's values as a constant: backpropagation does not
// pass through it. The result views x's data.
func (t *Tape) StopGradient(x *Tensor) *Tensor {
	_, out := t.push(opLeaf, x.Rows, x.Cols, nil, nil, nil)
	out.Data = x.Data[:x.Len()]
	return out
}

// Backward backpropagates from the 1×1 tensor loss, accumulating
// d(loss)/d(p) into the Grad of every parameter p that loss depends on. Run
// it once per forward pass (intermediate gradients are not cleared after);
// clear parameter gradients between steps with Params.ZeroGrad.
func (t *Tape) Backward(loss *Tensor) {
	if loss.Rows != 1 || loss.Cols != 1 {
		panic(fmt.Sprintf("models: Backward from a %s tensor; reduce the loss to 1x1 first (Sum or Mean)", loss.shape()))
	}
	if loss.Grad == nil {
		return // nothing trainable reaches the loss
	}
	loss.Grad[0] += 1
	t.backprop()
}

// BackwardFrom backpropagates given output gradients: grad[i] is
// d(loss)/d(out.Data[i]) for some loss computed outside the tape (a remote
// learner's, for instance). It accumulates parameter gradients like
// Backward.
func (t *Tape) BackwardFrom(out *Tensor, grad []float64) error {
	if len(grad) != out.Len() {
		return fmt.Errorf("models: BackwardFrom: %d output gradients for a %s output", len(grad), out.shape())
	}
	if out.Grad == nil {
		return nil
	}
	for i, g := range grad {
		out.Grad[i] += g
	}
	t.backprop()
	return nil
}

func (t *Tape) backprop() {
	for i := t.n - 1; i >= 0; i-- {
		nd := t.nodes[i]
		if nd.out.Grad == nil || nd.op == opLeaf {
			continue
		}
		nd.backward()
	}
}

// gemm computes C = op(A)·op(B) + beta·C for beta 0 or 1, where op
// transposes when tA or tB is set. On CPUs with AVX2 and FMA it runs the
// package's register-blocked assembly kernel (transposing B into scratch
// first when tB, so the kernel always streams rows of B); elsewhere it uses
// gonum's BLAS.
func gemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int, scratch *[]float64) {
	if !haveFMA {
		gemmGonum(tA, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if beta == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	if tB {
		if cap(*scratch) < k*n {
			*scratch = make([]float64, k*n)
		}
		bt := (*scratch)[:k*n]
		for j := 0; j < n; j++ {
			for l, v := range b[j*ldb : j*ldb+k] {
				bt[l*n+j] = v
			}
		}
		b, ldb = bt, n
	}
	gemmAcc(tA, m, n, k, a, lda, b, ldb, c, ldc)
}

// gemmAcc adds op(A)·B to C with the assembly kernels: 4×8 blocks of C,
// then leftover rows 1×8, then leftover columns in Go.
func gemmAcc(tA bool, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	ars, aks := lda, 1
	if tA {
		ars, aks = 1, lda
	}
	// The kernels do not check bounds, so check the farthest reads here.
	if (m-1)*ars+(k-1)*aks >= len(a) || (k-1)*ldb+n > len(b) || (m-1)*ldc+n > len(c) {
		panic(fmt.Sprintf("models: gemm %dx%dx%d: operands too short (%d, %d, %d)", m, n, k, len(a), len(b), len(c)))
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
		for i := 0; i < m; i++ {
			ai := i * ars
			s := 0.0
			for l := 0; l < k; l++ {
				s += a[ai+l*aks] * b[l*ldb+j]
			}
			c[i*ldc+j] += s
		}
	}
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
