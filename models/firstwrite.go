package models

// A data-parallel learner's shards each backpropagate into gradients of
// their own, which the team then sums. With Backward, every step first
// clears each shard's gradient (a pass over all of it, on whichever core
// the sum ran on, whose cache then holds the lines the shard writes next)
// and the backward pass then reads every value back to add to it.
// BackwardSet instead has the first operation of the backward pass that
// reaches a parameter write its gradient: the product's kernels store a
// dense layer's weight gradient (dW = Xᵀ·dY) without reading it, which for
// PixelPong's 1600×128 weight saves two passes over 1.6 MB per shard and
// step. Which operation reaches a parameter first is a property of the
// recorded graph, found by one walk over the tape in backward order before
// the pass. The results' gradients are handled alike: PixelPong's features
// (1600 values a row) get their gradient from the dense layer's dX product,
// which now writes it instead of adding to a copy cleared in the forward
// pass.

// BackwardSet backpropagates from the 1×1 tensor loss like Backward, but
// sets the gradients of p to d(loss)/d(p) instead of adding to them, so
// no ZeroGrad is needed before it: each of p's gradients is written by the
// first operation of the backward pass that reaches it (a matrix product
// stores it; other operations have it cleared just before they add to it),
// and gradients of p that loss does not depend on are zeroed. The values
// are the bits ZeroGrad and Backward give. Gradients of tensors outside p
// (Variables, another model's parameters) accumulate as with Backward.
//
// The same holds for the results' gradients: after a BackwardSet, the
// tape's forward passes no longer clear them as they record operations;
// the next BackwardSet has the first operation that reaches each one write
// or clear it (Backward, AddGrad and Propagate clear them all first). So
// a result's Grad read between a forward and a backward pass on such a
// tape holds old values.
func (t *Tape) BackwardSet(loss *Tensor, p *Params) {
	checkLoss(loss)
	if loss.Grad == nil {
		p.ZeroGrad() // nothing trainable reaches the loss
		return
	}
	last := t.nodeOf(loss, t.n)
	if last < 0 { // not a result of this tape: add to cleared gradients
		p.ZeroGrad()
		t.Backward(loss)
		return
	}
	t.markFirst(p, last)
	loss.Grad[0] += 1
	t.backprop(last)
	for j, x := range p.tensors {
		if !t.seen[j] {
			clear(x.Grad)
		}
	}
	for _, nd := range t.nodes[:last+1] {
		nd.set, nd.clears = 0, nd.clears[:0]
	}
	t.lazy = true
}

// Input slots of a node, as bits of node.set.
const (
	slotA = 1 << iota
	slotB
	slotC
)

// markFirst walks the tape in backward order from the node last (the
// loss's) and gives each gradient of p, and each result's gradient, to
// the first node whose backward pass reaches it: as a bit of the node's
// set when the node writes that input's gradient (matrix products), else
// in its clears (for results, only when stale). Results no node reaches
// (the loss among them) are cleared now. It leaves t.seen[j] true for each
// tensor j of p reached.
func (t *Tape) markFirst(p *Params, last int) {
	if cap(t.seen) < len(p.tensors) {
		t.seen = make([]bool, len(p.tensors))
	}
	t.seen = t.seen[:len(p.tensors)]
	clear(t.seen)
	for _, nd := range t.nodes[:last+1] {
		nd.claimed = false
	}
	for i := last; i >= 0; i-- {
		nd := t.nodes[i]
		nd.set, nd.clears = 0, nd.clears[:0]
		if nd.out.Grad == nil || nd.op == opLeaf {
			continue // backprop skips it
		}
		nd.gradInputs(func(slot uint8, x *Tensor) {
			var dirty bool // x's gradient holds values to clear unless written
			if j := p.indexOfGrad(x); j >= 0 {
				if t.seen[j] {
					return
				}
				t.seen[j], dirty = true, true
			} else if k := t.nodeOf(x, i); k >= 0 && t.nodes[k].op != opLeaf {
				src := t.nodes[k]
				if src.claimed {
					return
				}
				src.claimed, dirty = true, src.stale
			} else {
				return // a Variable, or another model's parameter: it adds
			}
			if nd.writes(slot) {
				nd.set |= slot
			} else if dirty {
				nd.clears = append(nd.clears, x)
			}
		})
	}
	for _, nd := range t.nodes[:last+1] {
		if nd.stale && !nd.claimed {
			clear(nd.out.Grad)
		}
		nd.stale = false
	}
}

// nodeOf returns the index of the node before end whose result x is, or
// -1; a result's readers come soon after it, so it looks back from end.
func (t *Tape) nodeOf(x *Tensor, end int) int {
	for k := end - 1; k >= 0; k-- {
		if t.nodes[k].out == x {
			return k
		}
	}
	return -1
}

// gradInputs calls visit for each tensor whose gradient the node's
// backward pass may add to, in the order it adds to them, with its slot
// bit (0 for one that is not an input slot: the float32 convolutions'
// earlier layers).
func (nd *node) gradInputs(visit func(slot uint8, x *Tensor)) {
	for k, x := range [...]*Tensor{nd.a, nd.b, nd.c, nd.d} {
		if x != nil && len(x.Grad) > 0 {
			visit(slotA<<k, x)
		}
	}
	if nd.op == opConv32 && nd.c32 != nil {
		for _, cl := range nd.c32.net.convs {
			for _, x := range [...]*Tensor{cl.kernel, cl.bias} {
				if x != nil && len(x.Grad) > 0 {
					visit(0, x)
				}
			}
		}
	}
}

// writes reports whether the node's backward pass can write (rather than
// add to) the gradient of the input in slot: every value of it, once.
func (nd *node) writes(slot uint8) bool {
	switch nd.op {
	case opMatMul:
		return slot == slotA || slot == slotB
	case opLinear:
		return slot == slotA || slot == slotB || slot == slotC
	}
	return false
}

// beta is gemm's beta for adding to (1) or writing (0) the gradient of the
// input in slot.
func (nd *node) beta(slot uint8) float64 {
	if nd.set&slot != 0 {
		return 0
	}
	return 1
}

// indexOfGrad returns the index of the tensor of p whose gradient x's is,
// or -1.
func (p *Params) indexOfGrad(x *Tensor) int {
	g := &x.Grad[0]
	for j, y := range p.tensors {
		if &y.Grad[0] == g && len(y.Grad) == len(x.Grad) {
			return j
		}
	}
	return -1
}
