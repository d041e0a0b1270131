package models

import (
	"encoding/json"
	"fmt"
	"math"
)

// ConvFilter is one convolutional layer of a ConvNet. In JSON it is
// RLlib's [out_channels, [kernel_h, kernel_w], stride], optionally followed
// by "valid" for no padding (the default pads to keep ⌈size/stride⌉).
type ConvFilter struct {
	Out, KH, KW, Stride int
	Valid               bool
}

// UnmarshalJSON reads [out, [kh, kw], stride] or [out, [kh, kw], stride, "valid"|"same"].
func (f *ConvFilter) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) < 3 || len(parts) > 4 {
		return fmt.Errorf("conv filter %s: want [out_channels, [kernel_h, kernel_w], stride] with an optional \"valid\"", b)
	}
	var kernel []int
	if json.Unmarshal(parts[0], &f.Out) != nil || json.Unmarshal(parts[1], &kernel) != nil || len(kernel) != 2 || json.Unmarshal(parts[2], &f.Stride) != nil {
		return fmt.Errorf("conv filter %s: want [out_channels, [kernel_h, kernel_w], stride] of integers", b)
	}
	f.KH, f.KW, f.Valid = kernel[0], kernel[1], false
	if len(parts) == 4 {
		var pad string
		if json.Unmarshal(parts[3], &pad) != nil || (pad != "valid" && pad != "same") {
			return fmt.Errorf("conv filter %s: padding must be \"valid\" or \"same\"", b)
		}
		f.Valid = pad == "valid"
	}
	return nil
}

// MarshalJSON writes the RLlib form read by UnmarshalJSON.
func (f ConvFilter) MarshalJSON() ([]byte, error) {
	v := []any{f.Out, []int{f.KH, f.KW}, f.Stride}
	if f.Valid {
		v = append(v, "valid")
	}
	return json.Marshal(v)
}

// String is the filter in its JSON form, as users write it.
func (f ConvFilter) String() string {
	b, _ := f.MarshalJSON()
	return string(b)
}

// The catalog's default filter stacks, RLlib's: two strided layers with
// "same" padding, then a layer whose valid 11×11 kernel covers what is left
// (21×21 → 11×11 → 1×1), giving 256 features.
var (
	convFilters84 = []ConvFilter{{16, 8, 8, 4, false}, {32, 4, 4, 2, false}, {256, 11, 11, 1, true}}
	convFilters42 = []ConvFilter{{16, 4, 4, 2, false}, {32, 4, 4, 2, false}, {256, 11, 11, 1, true}}
)

// DefaultConvFilters returns the catalog's conv_filters for h×w images:
// RLlib's stacks for 84×84 and 42×42, and an error naming the key and a
// stack that fits for any other size (as RLlib, the catalog does not guess
// a network for sizes it has no default for).
func DefaultConvFilters(h, w int) ([]ConvFilter, error) {
	switch {
	case h == 84 && w == 84:
		return append([]ConvFilter(nil), convFilters84...), nil
	case h == 42 && w == 42:
		return append([]ConvFilter(nil), convFilters42...), nil
	}
	return nil, fmt.Errorf("models: no default conv_filters for %dx%d images (there are defaults for 84x84 and 42x42); set model.conv_filters, for example %s, or preprocess the frames to 84x84 or 42x42",
		h, w, filtersString(SuggestConvFilters(h, w)))
}

// SuggestConvFilters returns a filter stack that fits h×w images: the
// 42×42 default's two strided layers (while the image is at least 8 pixels
// on each side), then a valid kernel covering what is left, giving 256
// features.
func SuggestConvFilters(h, w int) []ConvFilter {
	var fs []ConvFilter
	for _, out := range []int{16, 32} {
		if h < 8 || w < 8 {
			break
		}
		fs = append(fs, ConvFilter{Out: out, KH: 4, KW: 4, Stride: 2})
		h, w = (h+1)/2, (w+1)/2
	}
	return append(fs, ConvFilter{Out: 256, KH: h, KW: w, Stride: 1, Valid: true})
}

func filtersString(fs []ConvFilter) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

// convPlan checks filters against [h, w, c] observations and returns each
// layer's geometry. Every error names conv_filters, the layer and what
// would fit there.
func convPlan(obsShape []int, filters []ConvFilter) ([]ConvGeom, error) {
	h, w, c := obsShape[0], obsShape[1], obsShape[2]
	geoms := make([]ConvGeom, 0, len(filters))
	for i, f := range filters {
		if f.Out <= 0 || f.KH <= 0 || f.KW <= 0 || f.Stride <= 0 {
			return nil, fmt.Errorf("models: conv_filters[%d] %s: output channels, kernel sizes and stride must be positive", i, f)
		}
		if f.Valid && (f.KH > h || f.KW > w) {
			fit := f
			fit.KH, fit.KW = min(f.KH, h), min(f.KW, w)
			return nil, fmt.Errorf("models: conv_filters[%d] %s does not fit: its valid (unpadded) %dx%d kernel needs at least %dx%d input, but the layer gets %dx%dx%d (from %v observations); a kernel of at most %dx%d fits, such as %s, or drop \"valid\" to pad",
				i, f, f.KH, f.KW, f.KH, f.KW, h, w, c, obsShape, h, w, fit)
		}
		g, err := NewConvGeom(h, w, c, f.KH, f.KW, f.Stride, !f.Valid)
		if err != nil {
			return nil, fmt.Errorf("models: conv_filters[%d] %s: %w", i, f, err)
		}
		geoms = append(geoms, g)
		h, w, c = g.OH, g.OW, f.Out
	}
	return geoms, nil
}

type convLayer struct {
	geom         ConvGeom
	kernel, bias *Tensor
}

// ConvNet is RLlib's ConvolutionalNetwork for image observations
// [H, W, C]: convolutional layers (ModelOptions.ConvFilters, ReLU), then a
// FullyConnected network (Hiddens, heads, free log-std, value function) on
// the flattened features. The value function shares the convolutional
// layers. Where the CPU has AVX-512 the convolutional layers compute in
// float32 (see the package documentation and ModelOptions.ConvFloat64).
type ConvNet struct {
	convs []convLayer
	fc    *FullyConnected
	in    int
	prec  convPrecision
}

// convPrecision is the arithmetic of a ConvNet's convolutional layers.
type convPrecision uint8

const (
	// precAuto: float32 (training and acting) where the CPU has AVX-512,
	// float64 elsewhere.
	precAuto convPrecision = iota
	// prec64: float64 throughout (ModelOptions.ConvFloat64), the
	// reference path.
	prec64
	// prec32Portable: float32 training with the portable loops, whatever
	// the CPU (tests use it to check them).
	prec32Portable
)

// NewConvNet builds a ConvNet for observations of shape [h, w, c].
func NewConvNet(obsShape []int, numOutputs int, opts ModelOptions, seed uint64) (*ConvNet, error) {
	if len(obsShape) != 3 {
		return nil, fmt.Errorf("models: a convolutional network needs [height, width, channels] observations, got shape %v", obsShape)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	for _, d := range obsShape {
		if d <= 0 {
			return nil, fmt.Errorf("models: observation shape %v has a non-positive dimension", obsShape)
		}
	}
	filters := opts.ConvFilters
	if len(filters) == 0 {
		var err error
		if filters, err = DefaultConvFilters(obsShape[0], obsShape[1]); err != nil {
			return nil, err
		}
	}
	geoms, err := convPlan(obsShape, filters)
	if err != nil {
		return nil, err
	}
	p, rng := NewParams(), newRand(seed)
	n := &ConvNet{in: obsShape[0] * obsShape[1] * obsShape[2]}
	if opts.ConvFloat64 {
		n.prec = prec64
	}
	gain := 1.0
	if opts.Init == InitNameOrthogonal || opts.Init == "" {
		gain = math.Sqrt2
	}
	for i, g := range geoms {
		f := filters[i]
		l := convLayer{geom: g, kernel: p.New(fmt.Sprintf("conv%d/w", i), g.patch(), f.Out), bias: p.New(fmt.Sprintf("conv%d/b", i), 1, f.Out)}
		if err := opts.Init.Apply(l.kernel, gain, rng); err != nil {
			return nil, err
		}
		n.convs = append(n.convs, l)
	}
	last := geoms[len(geoms)-1]
	h, w, c := last.OH, last.OW, filters[len(filters)-1].Out
	fc, err := newFullyConnected(p, rng, h*w*c, numOutputs, opts)
	if err != nil {
		return nil, err
	}
	n.fc = fc
	return n, nil
}

// Params implements Model.
func (n *ConvNet) Params() *Params { return n.fc.params }

// NumInputs implements Model.
func (n *ConvNet) NumInputs() int { return n.in }

// NumOutputs implements Model.
func (n *ConvNet) NumOutputs() int { return n.fc.out }

// Forward implements Model.
func (n *ConvNet) Forward(t *Tape, obs *Tensor) Output {
	if obs.Cols != n.in {
		panic(fmt.Sprintf("models: ConvNet with %d inputs got observations %s", n.in, obs.shape()))
	}
	if n.prec != prec64 && use32(t) {
		return n.fc.Forward(t, n.features32(t, obs))
	}
	if use, asm := n.train32(t, obs); use {
		return n.fc.Forward(t, n.features32Train(t, obs, asm))
	}
	h := obs
	for _, l := range n.convs {
		h = t.Conv2DRelu(h, l.geom, l.kernel, l.bias)
	}
	return n.fc.Forward(t, h)
}
