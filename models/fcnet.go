package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
)

// ModelOptions configure the networks the catalog builds. The JSON keys are
// RLlib's, so a user's `"model": {...}` config reads the same.
type ModelOptions struct {
	// Hiddens are the hidden layer sizes; default [64, 64].
	Hiddens []int `json:"fcnet_hiddens"`
	// Activation is "tanh" (default) or "relu".
	Activation string `json:"fcnet_activation"`
	// FreeLogStd makes the second half of the outputs free parameters that
	// do not depend on the observation (a state-independent log standard
	// deviation for DiagGaussian); the network computes only the first half.
	FreeLogStd bool `json:"free_log_std"`
	// VFShareLayers puts the value head on the policy's last hidden layer
	// instead of building a separate value network of the same shape.
	// Only used when Value is set.
	VFShareLayers bool `json:"vf_share_layers"`
	// Init is the weight initialiser: "orthogonal" (default), "normc" or
	// "xavier". Hidden layers use gain √2 (orthogonal) or 1 (others); the
	// output layer uses gain 0.01 so the first policy is near uniform, and
	// the value head gain 1.
	Init Init `json:"init"`
	// ConvFilters are the convolutional layers for image observations
	// ([H, W, C]), in RLlib's form [[out_channels, [kh, kw], stride], ...]
	// with an optional "valid" (no padding) after the stride; empty picks
	// RLlib's stacks for 84×84 and 42×42 images (DefaultConvFilters) and is
	// an error for other sizes. Filters that do not fit the observations
	// are an error when the model is built, naming what would fit.
	ConvFilters []ConvFilter `json:"conv_filters"`
	// ConvFloat64 computes the convolutional layers in float64 when
	// training and acting. By default they compute in float32 where the
	// CPU has AVX-512 (the weights, their gradients and the optimizer's
	// state stay float64), which trains as well and about twice as fast;
	// float64 is the reference the float32 path is tested against.
	ConvFloat64 bool `json:"conv_float64"`
	// CustomModel names a model built outside the catalog, by the
	// ModelResolver registered for its prefix: "plugin:<path>" is a model
	// plugin (package plugins registers that prefix). Empty: the catalog's
	// own models.
	CustomModel string `json:"custom_model"`
	// CustomOptions are the custom model's own options, passed to it
	// unchanged (a model plugin receives them as its config).
	CustomOptions map[string]any `json:"custom_options"`
	// UseLSTM wraps the fully connected layers in an LSTM of LSTMCellSize
	// units (LSTMNet): the policy keeps state across the steps of an
	// episode. Algorithms train it by truncated backpropagation through
	// time over sequences of at most MaxSeqLen steps. PPO and A3C support
	// it; ES and DQN reject it.
	UseLSTM      bool `json:"use_lstm"`
	LSTMCellSize int  `json:"lstm_cell_size"`
	MaxSeqLen    int  `json:"max_seq_len"`
	// CustomActionDist names an action distribution built outside the
	// catalog, by the DistResolver registered for its prefix:
	// "plugin:<path>" is a distribution plugin (package plugins registers
	// that prefix). Empty: the catalog's distribution for the action space.
	CustomActionDist string `json:"custom_action_dist"`
	// CustomActionDistOptions are the custom distribution's own options
	// (a distribution plugin receives them as its config).
	CustomActionDistOptions map[string]any `json:"custom_action_dist_options"`
	// Grayscale, Dim, Crop, FrameStack and FrameDiff shape the
	// preprocessing of image observations: see ImageOptions.
	Grayscale  *bool `json:"grayscale,omitempty"`
	Dim        int   `json:"dim,omitempty"`
	Crop       []int `json:"crop,omitempty"`
	FrameStack int   `json:"framestack,omitempty"`
	FrameDiff  bool  `json:"frame_diff,omitempty"`
	// Value asks for a value function output (Output.Value). Algorithms set
	// it (PPO and A3C do, ES and DQN do not); it is not a user key.
	Value bool `json:"-"`
}

// DefaultModelOptions returns the defaults: two hidden layers of 64 tanh
// units, orthogonal initialisation, no free log-std, separate value
// network, no LSTM (when switched on: 64 cells, sequences of 20 steps).
func DefaultModelOptions() ModelOptions {
	return ModelOptions{Hiddens: []int{64, 64}, Activation: "tanh", Init: InitNameOrthogonal, LSTMCellSize: 64, MaxSeqLen: 20}
}

// UnmarshalJSON decodes options strictly: an unknown key is an error that
// names it, rather than a silently ignored typo. Keys not given keep their
// current values, so decode into DefaultModelOptions().
func (o *ModelOptions) UnmarshalJSON(b []byte) error {
	type plain ModelOptions
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	p := plain(*o)
	// Decoding reuses a slice's array; keep the caller's intact.
	p.Hiddens = append([]int(nil), o.Hiddens...)
	p.ConvFilters = append([]ConvFilter(nil), o.ConvFilters...)
	p.CustomOptions = maps.Clone(o.CustomOptions)
	p.CustomActionDistOptions = maps.Clone(o.CustomActionDistOptions)
	p.Crop = append([]int(nil), o.Crop...)
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("model options (known keys: fcnet_hiddens, fcnet_activation, free_log_std, vf_share_layers, init, conv_filters, custom_model, custom_options, custom_action_dist, custom_action_dist_options, use_lstm, lstm_cell_size, max_seq_len, grayscale, dim, crop, framestack, frame_diff): %w", err)
	}
	*o = ModelOptions(p)
	return nil
}

// Validate reports the first unusable option.
func (o ModelOptions) Validate() error {
	for _, h := range o.Hiddens {
		if h <= 0 {
			return fmt.Errorf("models: fcnet_hiddens %v: every layer size must be positive", o.Hiddens)
		}
	}
	switch o.Activation {
	case "", "tanh", "relu":
	default:
		return fmt.Errorf("models: fcnet_activation %q: use tanh or relu", o.Activation)
	}
	switch o.Init {
	case "", InitNameNormc, InitNameOrthogonal, InitNameXavier:
	default:
		return fmt.Errorf("models: init %q: use orthogonal, normc or xavier", string(o.Init))
	}
	if o.UseLSTM {
		if o.LSTMCellSize < 1 {
			return fmt.Errorf("models: lstm_cell_size %d: with use_lstm it must be at least 1 (default 64)", o.LSTMCellSize)
		}
		if o.MaxSeqLen < 1 {
			return fmt.Errorf("models: max_seq_len %d: with use_lstm it must be at least 1 (default 20)", o.MaxSeqLen)
		}
		if o.CustomModel != "" {
			return fmt.Errorf("models: use_lstm with custom_model %q: a custom model cannot be wrapped in an LSTM; drop one of the two", o.CustomModel)
		}
	}
	return nil
}

// CheckFeedForward returns an error naming use_lstm when it is set, for
// algorithms (alg names them) that train feed-forward policies only.
func (o ModelOptions) CheckFeedForward(alg string) error {
	if o.UseLSTM {
		return fmt.Errorf("model.use_lstm: %s trains feed-forward policies only; remove use_lstm, or use PPO or A3C for a recurrent policy", alg)
	}
	return nil
}

// Output is what a model's forward pass produces.
type Output struct {
	// Out [batch×NumOutputs] feeds the action distribution.
	Out *Tensor
	// Last is the last hidden layer [batch×Hiddens[-1]] (the observation
	// itself when there are no hidden layers).
	Last *Tensor
	// Value [batch×1] is the value estimate, nil unless options.Value.
	Value *Tensor
}

// Model maps a batch of (preprocessed, flat) observations to distribution
// inputs and, optionally, values.
type Model interface {
	// Params holds every trainable weight, as one flat vector.
	Params() *Params
	// NumInputs is the observation size per row.
	NumInputs() int
	// NumOutputs is the number of columns of Output.Out.
	NumOutputs() int
	// Forward runs the model on obs [batch×NumInputs] on tape t.
	Forward(t *Tape, obs *Tensor) Output
}

// FullyConnected is RLlib's FullyConnectedNetwork: hidden layers with one
// activation, a linear output layer, optionally free log-std parameters and
// a value function (separate network or shared layers).
type FullyConnected struct {
	opts       ModelOptions
	in, out    int
	params     *Params
	hidden     []*Dense
	head       *Dense
	logStd     *Tensor
	vfHidden   []*Dense
	vfHead     *Dense
	activation opcode
	// first and split are the indices in params of the network's first
	// tensor and of its value network's first (the value network's
	// tensors, when it has its own, come last).
	first, split int
}

// NewFullyConnected builds a fully connected network with numInputs inputs
// and numOutputs outputs, its weights drawn from a generator seeded with
// seed (same seed, same weights).
func NewFullyConnected(numInputs, numOutputs int, opts ModelOptions, seed uint64) (*FullyConnected, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if numInputs <= 0 || numOutputs <= 0 {
		return nil, fmt.Errorf("models: fully connected network with %d inputs and %d outputs; both must be positive", numInputs, numOutputs)
	}
	if opts.FreeLogStd && numOutputs%2 != 0 {
		return nil, fmt.Errorf("models: free_log_std needs an even number of outputs (means, then log stds), got %d", numOutputs)
	}
	return newFullyConnected(NewParams(), newRand(seed), numInputs, numOutputs, opts)
}

// newRand returns the generator that initialises a model built with seed.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6d6f64656c73)) // second word: "models"
}

// newFullyConnected builds the network's layers into p (which may already
// hold other layers, such as a convolutional stack's).
func newFullyConnected(p *Params, rng *rand.Rand, numInputs, numOutputs int, opts ModelOptions) (*FullyConnected, error) {
	m := &FullyConnected{opts: opts, in: numInputs, out: numOutputs, params: p, activation: opTanh, first: len(p.tensors)}
	if opts.Activation == "relu" {
		m.activation = opRelu
	}
	hiddenGain := 1.0
	if opts.Init == InitNameOrthogonal || opts.Init == "" {
		hiddenGain = math.Sqrt2
	}
	build := func(prefix string) ([]*Dense, int, error) {
		var layers []*Dense
		prev := numInputs
		for i, h := range opts.Hiddens {
			d := NewDense(m.params, fmt.Sprintf("%s%d", prefix, i), prev, h)
			if err := opts.Init.Apply(d.W, hiddenGain, rng); err != nil {
				return nil, 0, err
			}
			layers = append(layers, d)
			prev = h
		}
		return layers, prev, nil
	}
	var last int
	var err error
	if m.hidden, last, err = build("fc"); err != nil {
		return nil, err
	}
	headOut := numOutputs
	if opts.FreeLogStd {
		headOut = numOutputs / 2
	}
	m.head = NewDense(m.params, "fc_out", last, headOut)
	if err := opts.Init.Apply(m.head.W, 0.01, rng); err != nil {
		return nil, err
	}
	if opts.FreeLogStd {
		m.logStd = m.params.New("log_std", 1, headOut)
	}
	m.split = len(p.tensors)
	if opts.Value {
		vfIn := last
		if !opts.VFShareLayers {
			if m.vfHidden, vfIn, err = build("vf"); err != nil {
				return nil, err
			}
		}
		m.vfHead = NewDense(m.params, "vf_out", vfIn, 1)
		if err := opts.Init.Apply(m.vfHead.W, 1, rng); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Params implements Model.
func (m *FullyConnected) Params() *Params { return m.params }

// NumInputs implements Model.
func (m *FullyConnected) NumInputs() int { return m.in }

// NumOutputs implements Model.
func (m *FullyConnected) NumOutputs() int { return m.out }

// Options returns the options the network was built with.
func (m *FullyConnected) Options() ModelOptions { return m.opts }

// Forward implements Model.
func (m *FullyConnected) Forward(t *Tape, obs *Tensor) Output {
	m.checkInputs(obs)
	h := m.hiddens(t, m.hidden, obs)
	o := Output{Last: h, Out: m.policyHead(t, h, obs.Rows)}
	if m.vfHead != nil {
		v := h
		if !m.opts.VFShareLayers {
			v = m.hiddens(t, m.vfHidden, obs)
		}
		o.Value = m.vfHead.Forward(t, v)
	}
	return o
}

func (m *FullyConnected) checkInputs(obs *Tensor) {
	if obs.Cols != m.in {
		panic(fmt.Sprintf("models: FullyConnected with %d inputs got observations %s", m.in, obs.shape()))
	}
}

// hiddens applies the hidden layers to x.
func (m *FullyConnected) hiddens(t *Tape, layers []*Dense, x *Tensor) *Tensor {
	for _, d := range layers {
		x = t.unary(m.activation, d.Forward(t, x), 0, 0)
	}
	return x
}

// policyHead is Output.Out from the last hidden layer h of rows rows.
func (m *FullyConnected) policyHead(t *Tape, h *Tensor, rows int) *Tensor {
	out := m.head.Forward(t, h)
	if m.logStd != nil {
		out = t.Concat(out, t.RepeatRows(m.logStd, rows))
	}
	return out
}

// Tower is one of a model's networks that shares no weight with the rest
// of the model, so that its gradient can be computed on a tape of its own,
// at the same time as the rest's.
type Tower struct {
	// Params are the tower's weights and gradients: a view of the model's
	// (Params.Slice).
	Params *Params
	// Forward computes the tower's output for obs on t.
	Forward func(t *Tape, obs *Tensor) *Tensor
}

// Towers returns the policy network (whose output is Forward's Out) and
// the value network (Forward's Value) of a network with a value network of
// its own (a value output without vf_share_layers); ok is false for any
// other. Each tower computes its output with the operations Forward
// records for it, so the values and gradients are Forward's, bit for bit.
// Call it after the model's weights are final (ShareWeights re-points
// them).
func (m *FullyConnected) Towers() (policy, value Tower, ok bool) {
	if m.vfHead == nil || m.opts.VFShareLayers {
		return Tower{}, Tower{}, false
	}
	policy = Tower{Params: m.params.Slice(m.first, m.split), Forward: func(t *Tape, obs *Tensor) *Tensor {
		m.checkInputs(obs)
		return m.policyHead(t, m.hiddens(t, m.hidden, obs), obs.Rows)
	}}
	value = Tower{Params: m.params.Slice(m.split, len(m.params.tensors)), Forward: func(t *Tape, obs *Tensor) *Tensor {
		m.checkInputs(obs)
		return m.vfHead.Forward(t, m.hiddens(t, m.vfHidden, obs))
	}}
	return policy, value, true
}
