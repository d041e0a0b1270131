package models

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Transposes lets the tapes of one data-parallel step share the transposes
// of the weight matrices their backward passes multiply by: a dense layer's
// input gradient is dX = dY·Wᵀ, and the matrix kernels stream rows of Wᵀ.
// Without sharing, every shard transposes every such weight (PixelPong's
// 1600×128 dense weight costs about as much as a quarter of a shard's
// product at two shards, and more than the product at sixteen); with it,
// the shards that reach a layer split its transpose in fixed chunks, each
// claiming the next chunk left, and then wait for the chunks others
// claimed. No shard waits for one that has not reached the layer: chunks
// are claimed only by a shard that is about to use them.
//
// A transpose is an exact copy, so the gradients are the bits a tape of
// its own computes, for any split: the product reads the transposed matrix
// it would have made itself. (A shard of so few rows that gemm multiplies
// without transposing, gemmFewRows, still does.)
//
// The owner calls Reset whenever the weights may have changed (before each
// step); between Resets the weights must not change. Tapes use it through
// Tape.ShareTransposes. Its methods other than Reset are safe for
// concurrent use.
type Transposes struct {
	byData map[*float64]*transposed
}

// transposed is one weight's shared transpose.
type transposed struct {
	rows, cols int
	src        []float64 // the weight, rows×cols (a view of the master's)
	t          []float64 // its transpose, cols×rows, made on first use
	alloc      sync.Once
	chunkRows  int          // rows of the weight per chunk
	chunks     int          // chunks in all
	next       atomic.Int64 // the next chunk to claim
	done       atomic.Int64 // chunks written since the last Reset
}

// transposeChunk is about how many values one chunk of a shared transpose
// holds: small enough that shards reaching a layer together split it
// evenly, large enough that claiming costs nothing next to copying.
const transposeChunk = 8192

// NewTransposes returns shared transposes for the matrices of p (tensors
// with more than one row and column). Tapes of copies sharing p's weights
// (Params.ShareWeights) find them too; other tensors, such as a custom
// model's own copies, are transposed by each tape as before.
func NewTransposes(p *Params) *Transposes {
	s := &Transposes{byData: make(map[*float64]*transposed)}
	for _, w := range p.Tensors() {
		if w.Rows < 2 || w.Cols < 2 {
			continue
		}
		// Whole 8-row tiles per chunk, as transposeRows writes them.
		chunkRows := max(8, transposeChunk/w.Cols&^7)
		s.byData[&w.Data[0]] = &transposed{
			rows: w.Rows, cols: w.Cols, src: w.Data[:w.Len()],
			chunkRows: chunkRows, chunks: (w.Rows + chunkRows - 1) / chunkRows,
		}
	}
	return s
}

// Reset marks every transpose out of date: call it after the weights
// change and before the next step's tapes read them.
func (s *Transposes) Reset() {
	if s == nil {
		return
	}
	for _, e := range s.byData {
		e.next.Store(0)
		e.done.Store(0)
	}
}

// of returns the transpose of w ([w.Cols × w.Rows]) when w is one of the
// shared weights, helping to write it and waiting until it is whole; nil
// otherwise.
func (s *Transposes) of(w *Tensor) []float64 {
	if s == nil || len(w.Data) == 0 {
		return nil
	}
	e := s.byData[&w.Data[0]]
	if e == nil || e.rows != w.Rows || e.cols != w.Cols {
		return nil
	}
	e.alloc.Do(func() { e.t = make([]float64, e.rows*e.cols) })
	for {
		c := int(e.next.Add(1) - 1)
		if c >= e.chunks {
			break
		}
		lo := c * e.chunkRows
		transposeRows(e.src, e.rows, e.cols, lo, min(lo+e.chunkRows, e.rows), e.t)
		e.done.Add(1)
	}
	// The chunks left are being written by shards that claimed them and
	// need nothing to finish: a short wait.
	for i := 1; e.done.Load() < int64(e.chunks); i++ {
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
	return e.t
}

// transposeRows writes rows [lo, hi) of the rows×cols matrix a (contiguous)
// into their columns of t (cols×rows).
func transposeRows(a []float64, rows, cols, lo, hi int, t []float64) {
	transposeBlock(a, rows, cols, cols, lo, hi, t)
}

// ShareTransposes makes the tape's backward passes read the weights'
// transposes from s (nil: each tape transposes on its own). It changes no
// result.
func (t *Tape) ShareTransposes(s *Transposes) { t.tr = s }

// transposedWeight returns the shared transpose of w for the gemm kernels
// (nil when there is none, or the kernels are not the package's own, whose
// arithmetic on a transposed B is that of the transposing path).
func (t *Tape) transposedWeight(w *Tensor) []float64 {
	if t.tr == nil || !haveFMA {
		return nil
	}
	return t.tr.of(w)
}

// backwardShared is backward for a MatMul or Linear node whose input needs
// its gradient, reading the weight's transpose wt (nil: backward's own).
func (nd *node) backwardShared(wt []float64) {
	if wt == nil {
		nd.backward()
		return
	}
	m, k, n := nd.a.Rows, nd.a.Cols, nd.b.Cols
	// dA += dC·Bᵀ with Bᵀ at hand: the kernels' path after gemm's own
	// transpose, so the same sums in the same order.
	gemm(false, false, m, k, n, nd.out.Grad, n, wt, k, nd.beta(slotA), nd.a.Grad, k, &nd.scratch)
	nd.productBackwardRest()
}

// productBackwardRest adds a MatMul or Linear node's weight gradient
// (dB += Aᵀ·dC) and a Linear node's bias gradient (the column sums of dC),
// or writes them (BackwardSet).
func (nd *node) productBackwardRest() {
	a, b, g := nd.a, nd.b, nd.out.Grad
	m, k, n := a.Rows, a.Cols, b.Cols
	if b.Grad != nil {
		gemm(true, false, k, n, m, a.Data, k, g, n, nd.beta(slotB), b.Grad, n, &nd.scratch)
	}
	if c := nd.c; nd.op == opLinear && c != nil && c.Grad != nil {
		cg, i := c.Grad[:n], 0
		if nd.set&slotC != 0 {
			if m == 0 {
				clear(cg)
			}
			// The first row written, plus 0 (a cleared gradient's bits
			// for a -0), then the others added.
			for j, v := range g[:min(m, 1)*n] {
				cg[j] = 0 + v
			}
			i = 1
		}
		for ; i < m; i++ {
			for j, v := range g[i*n : (i+1)*n] {
				cg[j] += v
			}
		}
	}
}
