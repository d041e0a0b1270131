package models

import (
	"fmt"
	"math/rand/v2"
)

// ResNetConfig shapes a small residual network for images [H, W, C].
type ResNetConfig struct {
	H, W, C int
	// Classes is the number of outputs.
	Classes int
	// Widths are the channels of each stage; every stage after the first
	// halves the image size. The stem is a 3×3 ConvBN to Widths[0].
	Widths []int
	// Blocks is the number of residual blocks per stage (at least 1).
	Blocks int
}

// ResNet is a residual network for classification: a 3×3 ConvBN stem,
// stages of ResidualBlocks, global average pooling and a dense layer to
// the class logits.
type ResNet struct {
	Config ResNetConfig
	params *Params
	stem   *ConvBN
	blocks []*ResidualBlock
	fc     *Dense
}

// NewResNet builds a ResNet with weights drawn from seed.
func NewResNet(cfg ResNetConfig, seed uint64) (*ResNet, error) {
	if cfg.H <= 0 || cfg.W <= 0 || cfg.C <= 0 || cfg.Classes <= 0 || len(cfg.Widths) == 0 || cfg.Blocks <= 0 {
		return nil, fmt.Errorf("models: ResNet config %+v: image size, channels, classes, widths and blocks must all be positive", cfg)
	}
	p, rng := NewParams(), rand.New(rand.NewPCG(seed, 0x7e5))
	n := &ResNet{Config: cfg, params: p}
	var err error
	if n.stem, err = NewConvBN(p, "stem", cfg.H, cfg.W, cfg.C, cfg.Widths[0], 3, 1, rng); err != nil {
		return nil, err
	}
	shape := n.stem.OutShape()
	for s, width := range cfg.Widths {
		for b := 0; b < cfg.Blocks; b++ {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			blk, err := NewResidualBlock(p, fmt.Sprintf("stage%d/block%d", s, b), shape[0], shape[1], shape[2], width, stride, rng)
			if err != nil {
				return nil, err
			}
			n.blocks = append(n.blocks, blk)
			shape = blk.OutShape()
		}
	}
	n.fc = NewDense(p, "fc", shape[2], cfg.Classes)
	InitXavier(n.fc.W, 1, rng)
	return n, nil
}

// Params returns the trainable weights.
func (n *ResNet) Params() *Params { return n.params }

// NumInputs is H·W·C.
func (n *ResNet) NumInputs() int { return n.Config.H * n.Config.W * n.Config.C }

// Forward returns the logits [batch×Classes] of images x [batch×H·W·C];
// train selects batch statistics (and updates the running ones).
func (n *ResNet) Forward(t *Tape, x *Tensor, train bool) *Tensor {
	if x.Cols != n.NumInputs() {
		panic(fmt.Sprintf("models: ResNet for %dx%dx%d images got %s", n.Config.H, n.Config.W, n.Config.C, x.shape()))
	}
	h := t.Relu(n.stem.Forward(t, x, train))
	for _, b := range n.blocks {
		h = b.Forward(t, h, train)
	}
	last := n.blocks[len(n.blocks)-1].OutShape()
	return n.fc.Forward(t, t.GlobalAvgPool(h, last[2]))
}

// BatchNorms lists every normalisation layer, in a fixed order.
func (n *ResNet) BatchNorms() []*BatchNorm {
	out := []*BatchNorm{n.stem.BN}
	for _, b := range n.blocks {
		out = append(out, b.BatchNorms()...)
	}
	return out
}

// Stats returns the running statistics of every BatchNorm as one vector.
func (n *ResNet) Stats() []float64 {
	var s []float64
	for _, bn := range n.BatchNorms() {
		s = append(s, bn.Stats()...)
	}
	return s
}

// SetStats restores statistics returned by Stats.
func (n *ResNet) SetStats(s []float64) error {
	for _, bn := range n.BatchNorms() {
		if len(s) < 2*bn.C {
			return fmt.Errorf("models: ResNet.SetStats: %d statistics too few", len(s))
		}
		if err := bn.SetStats(s[:2*bn.C]); err != nil {
			return err
		}
		s = s[2*bn.C:]
	}
	if len(s) != 0 {
		return fmt.Errorf("models: ResNet.SetStats: %d statistics too many", len(s))
	}
	return nil
}
