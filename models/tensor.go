package models

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Tensor is a row-major float64 matrix: a batch is [rows = batch, cols =
// features]. A tensor whose Grad is non-nil takes part in backpropagation;
// Backward accumulates d(loss)/d(Data[i]) into Grad[i].
//
// Tensors returned by Tape operations are owned by the tape and stay valid
// until the tape's next Reset, which recycles their buffers. Parameter
// tensors (from Params.New) live as long as their Params.
type Tensor struct {
	Rows, Cols int
	Data       []float64
	Grad       []float64
}

// Len is Rows*Cols.
func (x *Tensor) Len() int { return x.Rows * x.Cols }

// At returns the element at row i, column j.
func (x *Tensor) At(i, j int) float64 { return x.Data[i*x.Cols+j] }

// Row returns row i as a view (not a copy).
func (x *Tensor) Row(i int) []float64 { return x.Data[i*x.Cols : (i+1)*x.Cols] }

// Item returns the single value of a 1×1 tensor, such as a loss.
func (x *Tensor) Item() float64 {
	if x.Rows != 1 || x.Cols != 1 {
		panic(fmt.Sprintf("models: Item on a %dx%d tensor; it needs a 1x1 tensor", x.Rows, x.Cols))
	}
	return x.Data[0]
}

// RequiresGrad reports whether backpropagation reaches this tensor.
func (x *Tensor) RequiresGrad() bool { return x.Grad != nil }

// Dense returns a gonum matrix viewing the tensor's data (no copy), for
// callers that want gonum's linear algebra.
func (x *Tensor) Dense() *mat.Dense { return mat.NewDense(x.Rows, x.Cols, x.Data[:x.Len()]) }

// String describes the tensor's shape.
func (x *Tensor) String() string { return fmt.Sprintf("Tensor[%dx%d]", x.Rows, x.Cols) }

func (x *Tensor) shape() string { return fmt.Sprintf("[%dx%d]", x.Rows, x.Cols) }

// Params is a model's set of trainable tensors. All weights live in one flat
// vector and all gradients in another, each tensor viewing its slice of
// them, so that shipping weights (GetFlat/SetFlat), shipping gradients and
// stepping an optimizer are single copies or single loops.
type Params struct {
	tensors []*Tensor
	names   []string
	data    []float64
	grad    []float64
	// lo is where a view (Slice) starts in its model's flat vectors.
	lo int
}

// NewParams returns an empty parameter set.
func NewParams() *Params { return &Params{} }

// New adds a zero-initialised rows×cols parameter tensor named name and
// returns it. Adding re-points the earlier tensors into the grown flat
// vectors, so keep *Tensor pointers rather than their Data slices.
func (p *Params) New(name string, rows, cols int) *Tensor {
	if rows <= 0 || cols <= 0 {
		panic(fmt.Sprintf("models: parameter %q with shape [%dx%d]; both sizes must be positive", name, rows, cols))
	}
	n := len(p.data)
	size := rows * cols
	data := make([]float64, n+size)
	grad := make([]float64, n+size)
	copy(data, p.data)
	copy(grad, p.grad)
	p.data, p.grad = data, grad
	t := &Tensor{Rows: rows, Cols: cols}
	p.tensors = append(p.tensors, t)
	p.names = append(p.names, name)
	off := 0
	for _, x := range p.tensors {
		l := x.Rows * x.Cols
		x.Data = p.data[off : off+l : off+l]
		x.Grad = p.grad[off : off+l : off+l]
		off += l
	}
	return t
}

// ShareWeights points p's tensors at src's weight vector, so that p reads
// (and steps) src's weights without copying them, while keeping gradients
// of its own: the data-parallel shards of a learner share one model's
// weights this way. p and src must have the same signature (same names
// and shapes); p's own weights are dropped.
func (p *Params) ShareWeights(src *Params) error {
	if p.Signature() != src.Signature() {
		return fmt.Errorf("models: ShareWeights: the parameters differ (%s, and %s); share weights only between models of one configuration", p.Signature(), src.Signature())
	}
	p.data = src.data
	off := 0
	for _, x := range p.tensors {
		l := x.Rows * x.Cols
		x.Data = p.data[off : off+l : off+l]
		off += l
	}
	return nil
}

// Slice returns the tensors [from, to) of p (in creation order) as a
// Params of their own whose weights and gradients are p's memory: a part
// of a model whose gradient is computed on its own, such as a network that
// shares no weight with the rest of the model (Tower). Take the view after
// p is complete: New and ShareWeights re-point p's tensors, not the view.
func (p *Params) Slice(from, to int) *Params {
	if from < 0 || from > to || to > len(p.tensors) {
		panic(fmt.Sprintf("models: Params.Slice(%d, %d) of %d tensors", from, to, len(p.tensors)))
	}
	lo := 0
	for _, x := range p.tensors[:from] {
		lo += x.Len()
	}
	hi := lo
	for _, x := range p.tensors[from:to] {
		hi += x.Len()
	}
	return &Params{
		tensors: p.tensors[from:to:to], names: p.names[from:to:to],
		data: p.data[lo:hi:hi], grad: p.grad[lo:hi:hi], lo: p.lo + lo,
	}
}

// Span returns the range [lo, hi) of its model's flat weights (and
// gradients) that p covers: where a view made by Slice is, and [0, Len)
// for a model's own Params.
func (p *Params) Span() (lo, hi int) { return p.lo, p.lo + len(p.data) }

// Signature describes the parameters' names and shapes, e.g.
// "fc0/w[4x64] fc0/b[1x64] ...". Save it with weights and compare it on
// restore: two models can have equally many weights and still differ.
func (p *Params) Signature() string {
	var b strings.Builder
	for i, t := range p.tensors {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s[%dx%d]", p.names[i], t.Rows, t.Cols)
	}
	return b.String()
}

// Len is the total number of scalar parameters.
func (p *Params) Len() int { return len(p.data) }

// Tensors returns the parameter tensors in creation order.
func (p *Params) Tensors() []*Tensor { return p.tensors }

// Names returns the parameter names in creation order.
func (p *Params) Names() []string { return p.names }

// Flat returns the flat weight vector itself (a view: writes change the
// model). Optimizers step it in place.
func (p *Params) Flat() []float64 { return p.data }

// Grads returns the flat gradient vector itself (a view).
func (p *Params) Grads() []float64 { return p.grad }

// GetFlat copies the weights into dst (grown if too small) and returns it.
func (p *Params) GetFlat(dst []float64) []float64 {
	if cap(dst) < len(p.data) {
		dst = make([]float64, len(p.data))
	}
	dst = dst[:len(p.data)]
	copy(dst, p.data)
	return dst
}

// SetFlat copies w into the weights. w must hold exactly Len() values.
func (p *Params) SetFlat(w []float64) error {
	if len(w) != len(p.data) {
		return fmt.Errorf("models: SetFlat: got %d weights, the model has %d; the weights come from a different model or configuration", len(w), len(p.data))
	}
	copy(p.data, w)
	return nil
}

// GetFlatGrad copies the gradients into dst (grown if too small).
func (p *Params) GetFlatGrad(dst []float64) []float64 {
	if cap(dst) < len(p.grad) {
		dst = make([]float64, len(p.grad))
	}
	dst = dst[:len(p.grad)]
	copy(dst, p.grad)
	return dst
}

// SetFlatGrad copies g into the gradients, e.g. gradients received from a
// remote worker before an optimizer step.
func (p *Params) SetFlatGrad(g []float64) error {
	if len(g) != len(p.grad) {
		return fmt.Errorf("models: SetFlatGrad: got %d gradients, the model has %d parameters", len(g), len(p.grad))
	}
	copy(p.grad, g)
	return nil
}

// CheckFinite returns an error naming the first weight (and, with grads,
// the first gradient) that is NaN or infinite, so a diverging run stops
// with a cause instead of writing NaN into a checkpoint.
func (p *Params) CheckFinite(grads bool) error {
	check := func(kind string, v []float64) error {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				name, at := p.locate(i)
				return fmt.Errorf("models: %s %s[%d] is %v", kind, name, at, x)
			}
		}
		return nil
	}
	if err := check("weight", p.data); err != nil {
		return err
	}
	if grads {
		return check("gradient of", p.grad)
	}
	return nil
}

// locate maps a flat index to its tensor's name and offset.
func (p *Params) locate(i int) (string, int) {
	for k, t := range p.tensors {
		n := t.Len()
		if i < n {
			return p.names[k], i
		}
		i -= n
	}
	return "?", i
}

// ZeroGrad clears every gradient. Backward accumulates, so call it before
// each backward pass whose gradients should not add to the previous ones
// (Tape.BackwardSet needs no clear: it writes them).
func (p *Params) ZeroGrad() { clear(p.grad) }
