package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/gray-ml/gray/models"
)

// Net is a catalog network (models.DeviceGraphOf) on the device: its
// weights, their gradients and Adam's moments live in device buffers
// across steps; Forward and Backward work on batches of at most MaxRows
// rows already on the device.
type Net struct {
	d       *Device
	g       models.DeviceGraph
	maxRows int
	// W, G, M, V: weights, gradients and Adam's moments, each the model's
	// flat parameter layout (models.Params.Flat) in float32.
	W, G, M, V *Buffer
	adamStep   int
	norm       *Buffer // the squared global norm of the last clip
	ones       *Buffer // bias gradients are onesᵀ·dz
	x          *tensor // the input rows (no gradient)
	convs      []*layer
	hidden     []*layer
	vfHidden   []*layer
	head, vf   *layer
	owned      []*Buffer
}

// tensor is an activation on the device and its gradient (nil when
// nothing needs it).
type tensor struct {
	y, dy *Buffer
	cols  int
}

type layer struct {
	spec    models.DeviceLayer
	in, out *tensor
	// patches, dpatches: a convolution's unfolded input and its gradient
	// (nil when the kernel covers the whole image: the input is its own
	// patch matrix).
	patches, dpatches *Buffer
}

// rows is how many rows of the unfolded input (or of the input) one
// batch row makes.
func (l *layer) rowsPer() int {
	if l.spec.Kind == models.LayerConv {
		return l.spec.Conv.OH * l.spec.Conv.OW
	}
	return 1
}

// k is the unfolded (or plain) input width.
func (l *layer) k() int {
	if l.spec.Kind == models.LayerConv {
		c := l.spec.Conv
		return c.KH * c.KW * c.Cin
	}
	return l.spec.In
}

// cout is the output width per unfolded row.
func (l *layer) cout() int { return l.spec.Out / l.rowsPer() }

func whole(g models.ConvGeom) bool {
	return g.OH == 1 && g.OW == 1 && g.KH == g.H && g.KW == g.W && g.PadTop == 0 && g.PadLeft == 0
}

// NewNet puts model m on the device for batches of up to maxRows rows,
// with its current weights. A model the backend cannot compute gives a
// *models.NoDeviceKernelError; too little memory an *OutOfMemoryError.
func NewNet(d *Device, m models.Model, maxRows int) (*Net, error) {
	g, err := models.DeviceGraphOf(m)
	if err != nil {
		return nil, err
	}
	if maxRows < 1 {
		return nil, fmt.Errorf("cuda: NewNet for %d rows", maxRows)
	}
	n := &Net{d: d, g: g, maxRows: maxRows}
	if err := n.build(); err != nil {
		_ = n.Close()
		return nil, err
	}
	if err := n.SetWeights(m.Params().Flat()); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Net) alloc(what string, size int) (*Buffer, error) {
	b, err := n.d.Alloc(what, size)
	if err != nil {
		return nil, err
	}
	n.owned = append(n.owned, b)
	return b, nil
}

func (n *Net) newTensor(what string, cols int, grad bool) (*tensor, error) {
	t := &tensor{cols: cols}
	var err error
	if t.y, err = n.alloc(what, n.maxRows*cols); err != nil {
		return nil, err
	}
	if grad {
		if t.dy, err = n.alloc(what+" gradient", n.maxRows*cols); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// build allocates the parameters and every layer's buffers.
func (n *Net) build() error {
	var err error
	p := n.g.NumParams
	for _, b := range []struct {
		dst  **Buffer
		what string
	}{{&n.W, "the weights"}, {&n.G, "the gradients"}, {&n.M, "Adam's first moments"}, {&n.V, "Adam's second moments"}} {
		if *b.dst, err = n.alloc(b.what, p); err != nil {
			return err
		}
	}
	if n.norm, err = n.alloc("the gradient norm", 1); err != nil {
		return err
	}
	maxPer := 1
	for _, c := range n.g.Convs {
		maxPer = max(maxPer, c.Conv.OH*c.Conv.OW)
	}
	if n.ones, err = n.alloc("a vector of ones", n.maxRows*maxPer); err != nil {
		return err
	}
	if err := n.d.fill(n.ones, 1); err != nil {
		return err
	}
	if n.x, err = n.newTensor("the input", n.g.In, false); err != nil {
		return err
	}
	mk := func(spec models.DeviceLayer, in *tensor, what string) (*layer, error) {
		l := &layer{spec: spec, in: in}
		var err error
		if l.out, err = n.newTensor(what, spec.Out, true); err != nil {
			return nil, err
		}
		if spec.Kind == models.LayerConv && !whole(spec.Conv) {
			size := n.maxRows * l.rowsPer() * l.k()
			if l.patches, err = n.alloc(what+" patches", size); err != nil {
				return nil, err
			}
			if in.dy != nil {
				if l.dpatches, err = n.alloc(what+" patch gradients", size); err != nil {
					return nil, err
				}
			}
		}
		return l, nil
	}
	cur := n.x
	for i, s := range n.g.Convs {
		l, err := mk(s, cur, fmt.Sprintf("conv layer %d", i))
		if err != nil {
			return err
		}
		n.convs = append(n.convs, l)
		cur = l.out
	}
	features := cur
	for i, s := range n.g.Hidden {
		l, err := mk(s, cur, fmt.Sprintf("hidden layer %d", i))
		if err != nil {
			return err
		}
		n.hidden = append(n.hidden, l)
		cur = l.out
	}
	if n.head, err = mk(n.g.Head, cur, "the output layer"); err != nil {
		return err
	}
	if n.g.VFHead != nil {
		vin := cur
		if !n.g.VFShare {
			vin = features
			for i, s := range n.g.VFHidden {
				l, err := mk(s, vin, fmt.Sprintf("value layer %d", i))
				if err != nil {
					return err
				}
				n.vfHidden = append(n.vfHidden, l)
				vin = l.out
			}
		}
		if n.vf, err = mk(*n.g.VFHead, vin, "the value layer"); err != nil {
			return err
		}
	}
	return nil
}

// Close frees the network's device memory.
func (n *Net) Close() error {
	var errs []error
	for _, b := range n.owned {
		errs = append(errs, b.Free())
	}
	n.owned = nil
	return errors.Join(errs...)
}

// NumParams is the length of the flat weight vector.
func (n *Net) NumParams() int { return n.g.NumParams }

// MaxRows is the largest batch Forward takes.
func (n *Net) MaxRows() int { return n.maxRows }

// NumOutputs is the width of Out.
func (n *Net) NumOutputs() int { return n.g.Head.Out }

// Out is the output layer's buffer ([rows×NumOutputs] after Forward).
func (n *Net) Out() *Buffer { return n.head.out.y }

// Value is the value head's buffer ([rows] after Forward), nil without a
// value function.
func (n *Net) Value() *Buffer {
	if n.vf == nil {
		return nil
	}
	return n.vf.out.y
}

// Input is the buffer Forward reads its rows from ([rows×In]).
func (n *Net) Input() *Buffer { return n.x.y }

// SetWeights uploads flat weights (the model's Params.Flat layout).
func (n *Net) SetWeights(w []float64) error {
	if len(w) != n.g.NumParams {
		return fmt.Errorf("cuda: %d weights for a network of %d", len(w), n.g.NumParams)
	}
	return n.W.Upload(0, w)
}

// Weights downloads the weights into dst (grown to NumParams).
func (n *Net) Weights(dst []float64) ([]float64, error) {
	if cap(dst) < n.g.NumParams {
		dst = make([]float64, n.g.NumParams)
	}
	dst = dst[:n.g.NumParams]
	return dst, n.W.Download(0, dst)
}

// Grads downloads the gradients into dst (grown to NumParams).
func (n *Net) Grads(dst []float64) ([]float64, error) {
	if cap(dst) < n.g.NumParams {
		dst = make([]float64, n.g.NumParams)
	}
	dst = dst[:n.g.NumParams]
	return dst, n.G.Download(0, dst)
}

// Forward runs the network on the first rows rows of Input, leaving the
// results in Out and Value and what Backward needs in the layers.
func (n *Net) Forward(rows int) error {
	if rows < 1 || rows > n.maxRows {
		return fmt.Errorf("cuda: forward pass of %d rows on a network sized for 1 to %d", rows, n.maxRows)
	}
	d := n.d
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	for _, l := range n.all() {
		if err := n.forward(l, rows); err != nil {
			return err
		}
	}
	return nil
}

// all lists the layers in an order where every input is computed first.
func (n *Net) all() []*layer {
	ls := append([]*layer(nil), n.convs...)
	ls = append(ls, n.hidden...)
	ls = append(ls, n.head)
	ls = append(ls, n.vfHidden...)
	if n.vf != nil {
		ls = append(ls, n.vf)
	}
	return ls
}

func (n *Net) forward(l *layer, rows int) error {
	d, s := n.d, l.spec
	r := rows * l.rowsPer()
	k, cout := l.k(), l.cout()
	a := l.in.y.ptr
	if l.patches != nil {
		c := s.Conv
		total := int64(r) * int64(k)
		if err := d.launch("im2col", int(total), 0, l.in.y, l.patches, total, c.H, c.W, c.Cin, c.KH, c.KW, c.Stride, c.PadTop, c.PadLeft, c.OH, c.OW); err != nil {
			return err
		}
		a = l.patches.ptr
	}
	y := l.out.y
	if err := d.gemm(false, false, r, cout, k, 1, a, n.W.at(s.W), 0, y.ptr); err != nil {
		return err
	}
	total := int64(r) * int64(cout)
	if err := d.launch("add_bias", int(total), 0, y, ptr(n.W.at(s.B)), total, cout); err != nil {
		return err
	}
	if s.Act != models.ActLinear {
		return d.launch("act_fwd", int(total), 0, y, total, int(s.Act))
	}
	return nil
}

// ZeroGrad clears the gradients (Backward accumulates into them).
func (n *Net) ZeroGrad() error {
	if err := n.d.enter(); err != nil {
		return err
	}
	defer n.d.leave()
	return n.d.zero(n.G.ptr, n.g.NumParams)
}

// Backward backpropagates the gradients of the loss with respect to Out
// (dOut, [rows×NumOutputs]) and Value (dValue, [rows]; nil without a value
// function) of the last Forward, adding the weights' gradients into G.
func (n *Net) Backward(rows int, dOut, dValue *Buffer) error {
	d := n.d
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	// Every activation gradient accumulates from its consumers: clear
	// them, then seed the heads'.
	for _, l := range n.all() {
		if err := d.zero(l.out.dy.ptr, rows*l.out.cols); err != nil {
			return err
		}
	}
	if err := d.copyDtoD(n.head.out.dy.ptr, dOut.ptr, rows*n.head.out.cols); err != nil {
		return err
	}
	if n.vf != nil {
		if dValue == nil {
			return errors.New("cuda: Backward of a network with a value function needs the value's gradient")
		}
		if err := d.copyDtoD(n.vf.out.dy.ptr, dValue.ptr, rows); err != nil {
			return err
		}
	}
	order := []*layer{n.head}
	if n.vf != nil {
		order = append(order, n.vf)
	}
	for i := len(n.vfHidden) - 1; i >= 0; i-- {
		order = append(order, n.vfHidden[i])
	}
	for i := len(n.hidden) - 1; i >= 0; i-- {
		order = append(order, n.hidden[i])
	}
	for i := len(n.convs) - 1; i >= 0; i-- {
		order = append(order, n.convs[i])
	}
	for _, l := range order {
		if err := n.backward(l, rows); err != nil {
			return err
		}
	}
	return nil
}

func (n *Net) backward(l *layer, rows int) error {
	d, s := n.d, l.spec
	r := rows * l.rowsPer()
	k, cout := l.k(), l.cout()
	dz := l.out.dy
	total := int64(r) * int64(cout)
	if s.Act != models.ActLinear {
		if err := d.launch("act_bwd", int(total), 0, dz, l.out.y, total, int(s.Act)); err != nil {
			return err
		}
	}
	a := l.in.y.ptr
	if l.patches != nil {
		a = l.patches.ptr
	}
	// dW += aᵀ·dz, db += onesᵀ·dz
	if err := d.gemm(true, false, k, cout, r, 1, a, dz.ptr, 1, n.G.at(s.W)); err != nil {
		return err
	}
	if err := d.gemm(false, false, 1, cout, r, 1, n.ones.ptr, dz.ptr, 1, n.G.at(s.B)); err != nil {
		return err
	}
	if l.in.dy == nil {
		return nil
	}
	if l.dpatches == nil { // dense, or a conv whose patches are its input
		return d.gemm(false, true, r, k, cout, 1, dz.ptr, n.W.at(s.W), 1, l.in.dy.ptr)
	}
	if err := d.gemm(false, true, r, k, cout, 1, dz.ptr, n.W.at(s.W), 0, l.dpatches.ptr); err != nil {
		return err
	}
	c := s.Conv
	pt := int64(r) * int64(k)
	return d.launch("col2im", int(pt), 0, l.dpatches, l.in.dy, pt, c.H, c.W, c.Cin, c.KH, c.KW, c.Stride, c.PadTop, c.PadLeft, c.OH, c.OW)
}

// ClipAndAdam clips the gradients to global norm maxNorm (0: no
// clipping), adds their pre-clip norm into normStat (a device value,
// or nil) and takes one Adam step with models.Adam's update (β1 0.9, β2
// 0.999, ε 1e-8).
func (n *Net) ClipAndAdam(lr, maxNorm float64, normStat ptr) error {
	d := n.d
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	p := int64(n.g.NumParams)
	if maxNorm > 0 || normStat != 0 {
		if err := d.zero(n.norm.ptr, 1); err != nil {
			return err
		}
		grid := int(min((p+255)/256, 1024))
		if err := d.launch("sumsq", int(p), grid, n.G, p, n.norm); err != nil {
			return err
		}
		if err := d.launch("clip_scale", int(p), 0, n.G, p, n.norm, float32(maxNorm), normStat); err != nil {
			return err
		}
	}
	n.adamStep++
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1 := 1 / (1 - math.Pow(b1, float64(n.adamStep)))
	c2 := 1 / (1 - math.Pow(b2, float64(n.adamStep)))
	return d.launch("adam", int(p), 0, n.W, n.G, n.M, n.V, p, float32(b1), float32(b2), float32(lr*c1), float32(math.Sqrt(c2)), float32(eps))
}

// AdamState downloads Adam's moments and step count.
func (n *Net) AdamState() (models.AdamState, error) {
	s := models.AdamState{Step: n.adamStep, M: make([]float64, n.g.NumParams), V: make([]float64, n.g.NumParams)}
	if err := n.M.Download(0, s.M); err != nil {
		return s, err
	}
	return s, n.V.Download(0, s.V)
}

// SetAdamState uploads Adam's moments (empty moments: a fresh optimizer).
func (n *Net) SetAdamState(s models.AdamState) error {
	if len(s.M) == 0 && len(s.V) == 0 {
		n.adamStep = 0
		if err := n.d.enter(); err != nil {
			return err
		}
		defer n.d.leave()
		return errors.Join(n.d.zero(n.M.ptr, n.g.NumParams), n.d.zero(n.V.ptr, n.g.NumParams))
	}
	if len(s.M) != n.g.NumParams || len(s.V) != n.g.NumParams {
		return fmt.Errorf("cuda: Adam state for %d and %d weights, the network has %d", len(s.M), len(s.V), n.g.NumParams)
	}
	if err := n.M.Upload(0, s.M); err != nil {
		return err
	}
	if err := n.V.Upload(0, s.V); err != nil {
		return err
	}
	n.adamStep = s.Step
	return nil
}

// fill sets every value of b to v.
func (d *Device) fill(b *Buffer, v float32) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return d.launch("fill", b.n, 0, b, int64(b.n), v)
}
