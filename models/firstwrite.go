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
// the pass.

// BackwardSet backpropagates from the 1×1 tensor loss like Backward, but
// sets the gradients of p to d(loss)/d(p) instead of adding to them, so
// no ZeroGrad is needed before it: each of p's gradients is written by the
// first operation of the backward pass that reaches it (a matrix product
// stores it; other operations have it cleared just before they add to it),
// and gradients of p that loss does not depend on are zeroed. The values
// are the bits ZeroGrad and Backward give. Gradients of tensors outside p
// (Variables, another model's parameters) accumulate as with Backward.
func (t *Tape) BackwardSet(loss *Tensor, p *Params) {
	checkLoss(loss)
	if loss.Grad == nil {
		p.ZeroGrad() // nothing trainable reaches the loss
		return
	}
	t.markFirst(p)
	loss.Grad[0] += 1
	t.backprop()
	for j, x := range p.tensors {
		if !t.seen[j] {
			clear(x.Grad)
		}
	}
	for _, nd := range t.nodes[:t.n] {
		nd.set, nd.clears = 0, nd.clears[:0]
	}
}

// Input slots of a node, as bits of node.set.
const (
	slotA = 1 << iota
	slotB
	slotC
)

// markFirst walks the tape in backward order and gives each gradient of p
// to the first node whose backward pass reaches it: as a bit of the node's
// set when the node writes that input's gradient (matrix products), else
// in its clears. It leaves t.seen[j] true for each tensor j of p reached.
func (t *Tape) markFirst(p *Params) {
	if cap(t.seen) < len(p.tensors) {
		t.seen = make([]bool, len(p.tensors))
	}
	t.seen = t.seen[:len(p.tensors)]
	clear(t.seen)
	for i := t.n - 1; i >= 0; i-- {
		nd := t.nodes[i]
		nd.set, nd.clears = 0, nd.clears[:0]
		if nd.out.Grad == nil || nd.op == opLeaf {
			continue // backprop skips it
		}
		nd.gradInputs(func(slot uint8, x *Tensor) {
			j := p.indexOfGrad(x)
			if j < 0 || t.seen[j] {
				return
			}
			t.seen[j] = true
			if nd.writes(slot) {
				nd.set |= slot
			} else {
				nd.clears = append(nd.clears, x)
			}
		})
	}
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
