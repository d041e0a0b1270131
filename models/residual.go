package models

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// InitHe fills w [fanIn×out] (a dense layer's or a convolution kernel's
// weights) with normal draws of standard deviation gain·√(2/fanIn), the
// initialisation for ReLU networks of He et al.
func InitHe(w *Tensor, gain float64, rng *rand.Rand) {
	std := gain * math.Sqrt(2/float64(w.Rows))
	for i := range w.Data {
		w.Data[i] = std * rng.NormFloat64()
	}
}

// ConvBN is a convolution without bias followed by batch normalisation.
type ConvBN struct {
	Geom   ConvGeom
	Kernel *Tensor
	BN     *BatchNorm
}

// NewConvBN adds a k×k convolution ("name/w", He-initialised) with the
// given stride and "same" padding over h×w×cin images to cout channels,
// and its BatchNorm ("name/bn"), to p.
func NewConvBN(p *Params, name string, h, w, cin, cout, k, stride int, rng *rand.Rand) (*ConvBN, error) {
	g, err := NewConvGeom(h, w, cin, k, k, stride, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cout <= 0 {
		return nil, fmt.Errorf("models: %s: %d output channels", name, cout)
	}
	c := &ConvBN{Geom: g, Kernel: p.New(name+"/w", g.patch(), cout), BN: NewBatchNorm(p, name+"/bn", cout)}
	InitHe(c.Kernel, 1, rng)
	return c, nil
}

// Forward applies the convolution and the normalisation.
func (c *ConvBN) Forward(t *Tape, x *Tensor, train bool) *Tensor {
	return c.BN.Forward(t, t.Conv2D(x, c.Geom, c.Kernel, nil), train)
}

// OutShape is the output's [height, width, channels].
func (c *ConvBN) OutShape() [3]int { return [3]int{c.Geom.OH, c.Geom.OW, c.Kernel.Cols} }

// ResidualBlock is the basic block of a ResNet (He et al.): two 3×3
// ConvBNs with a ReLU between, added to a shortcut, then a ReLU. The
// shortcut is the input itself, or a 1×1 ConvBN when the block changes
// the size or the number of channels.
type ResidualBlock struct {
	Conv1, Conv2 *ConvBN
	// Shortcut is nil for the identity.
	Shortcut *ConvBN
}

// NewResidualBlock adds a block over h×w×cin images with cout output
// channels and the given stride (of the first convolution) to p, its
// weights named under name.
func NewResidualBlock(p *Params, name string, h, w, cin, cout, stride int, rng *rand.Rand) (*ResidualBlock, error) {
	c1, err := NewConvBN(p, name+"/conv1", h, w, cin, cout, 3, stride, rng)
	if err != nil {
		return nil, err
	}
	c2, err := NewConvBN(p, name+"/conv2", c1.Geom.OH, c1.Geom.OW, cout, cout, 3, 1, rng)
	if err != nil {
		return nil, err
	}
	b := &ResidualBlock{Conv1: c1, Conv2: c2}
	if stride != 1 || cin != cout {
		if b.Shortcut, err = NewConvBN(p, name+"/shortcut", h, w, cin, cout, 1, stride, rng); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Forward applies the block to x [batch×h·w·cin].
func (b *ResidualBlock) Forward(t *Tape, x *Tensor, train bool) *Tensor {
	h := t.Relu(b.Conv1.Forward(t, x, train))
	h = b.Conv2.Forward(t, h, train)
	short := x
	if b.Shortcut != nil {
		short = b.Shortcut.Forward(t, x, train)
	}
	return t.Relu(t.Add(h, short))
}

// OutShape is the output's [height, width, channels].
func (b *ResidualBlock) OutShape() [3]int { return b.Conv2.OutShape() }

// BatchNorms lists the block's normalisation layers.
func (b *ResidualBlock) BatchNorms() []*BatchNorm {
	out := []*BatchNorm{b.Conv1.BN, b.Conv2.BN}
	if b.Shortcut != nil {
		out = append(out, b.Shortcut.BN)
	}
	return out
}
