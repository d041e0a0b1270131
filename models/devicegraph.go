package models

import "fmt"

// LayerKind names a layer of a DeviceGraph.
type LayerKind uint8

const (
	// LayerConv is a 2-D convolution (Conv2D's layout: images
	// height-width-channel, kernel [KH·KW·Cin × Cout]) plus bias.
	LayerConv LayerKind = iota + 1
	// LayerDense is x·W + b with W [In × Out].
	LayerDense
)

// Activation names a layer's elementwise activation in a DeviceGraph.
type Activation uint8

const (
	// ActLinear is no activation (output heads).
	ActLinear Activation = iota
	// ActReLU is max(x, 0).
	ActReLU
	// ActTanh is tanh(x).
	ActTanh
)

// DeviceLayer is one layer of a DeviceGraph: where its weights sit in the
// model's flat parameter vector (Params.Flat) and what it computes.
type DeviceLayer struct {
	Kind LayerKind
	// Conv is the geometry of a LayerConv.
	Conv ConvGeom
	// In and Out are the values per row before and after the layer.
	In, Out int
	// W and B are the offsets of the weights and the bias in Params.Flat;
	// the weights are In×Out (dense) or KH·KW·Cin×Cout (conv), row-major.
	W, B int
	Act  Activation
}

// DeviceGraph describes a catalog network (FullyConnected, or ConvNet) as
// plain layers over its flat parameter vector, for a backend that computes
// it elsewhere (package models/cuda). The graph computes, for input rows x:
//
//	f = Convs(x)               (each followed by its activation)
//	h = Hidden(f)              Out = Head(h)
//	Value = VFHead(h)          with VFShare
//	Value = VFHead(VFHidden(f)) otherwise
type DeviceGraph struct {
	In        int
	Convs     []DeviceLayer
	Hidden    []DeviceLayer
	Head      DeviceLayer
	VFShare   bool
	VFHidden  []DeviceLayer
	VFHead    *DeviceLayer // nil: no value function
	NumParams int
}

// NoDeviceKernelError reports a model a device backend cannot compute,
// naming the layer and the way out.
type NoDeviceKernelError struct {
	Layer string
	// Fix is what to do instead; empty: set num_gpus: 0 (the algorithms'
	// key).
	Fix string
}

// Error implements error, ending with what to do instead.
func (e *NoDeviceKernelError) Error() string {
	fix := e.Fix
	if fix == "" {
		fix = "set num_gpus: 0 to train this model on the CPU, or use the catalog's fully connected or convolutional network"
	}
	return fmt.Sprintf("models: %s has no GPU kernel; %s", e.Layer, fix)
}

// DeviceGraphOf describes m for a device backend. Only the catalog's
// feed-forward networks have a description: other models (LSTMNet,
// custom and plugin models) and free_log_std give a
// *NoDeviceKernelError.
func DeviceGraphOf(m Model) (DeviceGraph, error) {
	switch n := m.(type) {
	case *FullyConnected:
		return n.deviceGraph(nil, 0)
	case *ConvNet:
		var convs []DeviceLayer
		for _, l := range n.convs {
			g := l.geom
			convs = append(convs, DeviceLayer{
				Kind: LayerConv, Conv: g, In: g.H * g.W * g.Cin, Out: g.OH * g.OW * l.kernel.Cols,
				W: n.fc.params.offset(l.kernel), B: n.fc.params.offset(l.bias), Act: ActReLU,
			})
		}
		return n.fc.deviceGraph(convs, n.in)
	case *LSTMNet:
		return DeviceGraph{}, &NoDeviceKernelError{Layer: "the LSTM layer (model.use_lstm)"}
	}
	return DeviceGraph{}, &NoDeviceKernelError{Layer: fmt.Sprintf("model type %T (a custom model)", m)}
}

// deviceGraph describes the fully connected part; convs (with the
// network's input size in) come first when it sits on a ConvNet.
func (m *FullyConnected) deviceGraph(convs []DeviceLayer, in int) (DeviceGraph, error) {
	if m.logStd != nil {
		return DeviceGraph{}, &NoDeviceKernelError{Layer: "free_log_std (a Gaussian policy's free log standard deviations)"}
	}
	if in == 0 {
		in = m.in
	}
	act := ActTanh
	if m.activation == opRelu {
		act = ActReLU
	}
	p := m.params
	dense := func(d *Dense, a Activation) DeviceLayer {
		return DeviceLayer{Kind: LayerDense, In: d.W.Rows, Out: d.W.Cols, W: p.offset(d.W), B: p.offset(d.B), Act: a}
	}
	g := DeviceGraph{In: in, Convs: convs, Head: dense(m.head, ActLinear), VFShare: m.opts.VFShareLayers, NumParams: p.Len()}
	for _, d := range m.hidden {
		g.Hidden = append(g.Hidden, dense(d, act))
	}
	if m.vfHead != nil {
		for _, d := range m.vfHidden {
			g.VFHidden = append(g.VFHidden, dense(d, act))
		}
		h := dense(m.vfHead, ActLinear)
		g.VFHead = &h
	} else {
		g.VFShare = false
	}
	return g, nil
}

// offset is where t's values start in the flat vectors.
func (p *Params) offset(t *Tensor) int {
	off := 0
	for _, x := range p.tensors {
		if x == t {
			return off
		}
		off += x.Len()
	}
	panic("models: tensor is not one of these parameters")
}
