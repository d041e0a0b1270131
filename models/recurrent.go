package models

import (
	"fmt"
	"math"
)

// Recurrent is a model that carries state from step to step, such as
// LSTMNet. Rollouts keep one state row per sub-environment (zero at the
// start of an episode) and learners replay whole sequences from the state
// their first step saw.
type Recurrent interface {
	Model
	// StateSize is the number of state values per sequence.
	StateSize() int
	// ForwardSeq runs the model over b sequences of equal length: obs
	// [T·b×NumInputs] is time-major (rows t·b to t·b+b-1 are step t of
	// the b sequences) and state [b×StateSize] is each sequence's state
	// before its first step. The outputs have the same time-major rows.
	// When next is non-nil (len ≥ b·StateSize) it receives the state after
	// the last step.
	ForwardSeq(t *Tape, obs, state *Tensor, next []float64) Output
}

// LSTMNet is RLlib's LSTM-wrapped fully connected network: hidden layers
// (fcnet_hiddens, fcnet_activation) on each observation, an LSTM of
// lstm_cell_size units over time, and linear policy and value heads on the
// LSTM's output (the value head shares every layer, whatever
// vf_share_layers says). Its state per sequence is [h, c], 2·H values.
type LSTMNet struct {
	opts       ModelOptions
	in, out    int
	params     *Params
	hidden     []*Dense
	lstm       *LSTMLayer
	head       *Dense
	logStd     *Tensor
	vfHead     *Dense
	activation opcode
}

// NewLSTMNet builds an LSTM network with numInputs inputs and numOutputs
// outputs, its weights drawn from a generator seeded with seed.
func NewLSTMNet(numInputs, numOutputs int, opts ModelOptions, seed uint64) (*LSTMNet, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if numInputs <= 0 || numOutputs <= 0 {
		return nil, fmt.Errorf("models: LSTM network with %d inputs and %d outputs; both must be positive", numInputs, numOutputs)
	}
	if opts.LSTMCellSize < 1 {
		return nil, fmt.Errorf("models: lstm_cell_size %d: it must be at least 1", opts.LSTMCellSize)
	}
	if opts.FreeLogStd && numOutputs%2 != 0 {
		return nil, fmt.Errorf("models: free_log_std needs an even number of outputs (means, then log stds), got %d", numOutputs)
	}
	rng := newRand(seed)
	m := &LSTMNet{opts: opts, in: numInputs, out: numOutputs, params: NewParams(), activation: opTanh}
	if opts.Activation == "relu" {
		m.activation = opRelu
	}
	gain := 1.0
	if opts.Init == InitNameOrthogonal || opts.Init == "" {
		gain = math.Sqrt2
	}
	prev := numInputs
	for i, h := range opts.Hiddens {
		d := NewDense(m.params, fmt.Sprintf("fc%d", i), prev, h)
		if err := opts.Init.Apply(d.W, gain, rng); err != nil {
			return nil, err
		}
		m.hidden = append(m.hidden, d)
		prev = h
	}
	cell := opts.LSTMCellSize
	m.lstm = NewLSTMLayer(m.params, "lstm", prev, cell, rng)
	headOut := numOutputs
	if opts.FreeLogStd {
		headOut = numOutputs / 2
	}
	m.head = NewDense(m.params, "fc_out", cell, headOut)
	if err := opts.Init.Apply(m.head.W, 0.01, rng); err != nil {
		return nil, err
	}
	if opts.FreeLogStd {
		m.logStd = m.params.New("log_std", 1, headOut)
	}
	if opts.Value {
		m.vfHead = NewDense(m.params, "vf_out", cell, 1)
		if err := opts.Init.Apply(m.vfHead.W, 1, rng); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Params implements Model.
func (m *LSTMNet) Params() *Params { return m.params }

// NumInputs implements Model.
func (m *LSTMNet) NumInputs() int { return m.in }

// NumOutputs implements Model.
func (m *LSTMNet) NumOutputs() int { return m.out }

// StateSize implements Recurrent: h and c, lstm_cell_size values each.
func (m *LSTMNet) StateSize() int { return 2 * m.lstm.Hidden }

// Forward implements Model: every row is a sequence of one step from the
// zero state (callers that carry state use ForwardSeq).
func (m *LSTMNet) Forward(t *Tape, obs *Tensor) Output {
	return m.ForwardSeq(t, obs, t.Const(obs.Rows, m.StateSize(), nil), nil)
}

// ForwardSeq implements Recurrent.
func (m *LSTMNet) ForwardSeq(t *Tape, obs, state *Tensor, next []float64) Output {
	hid := m.lstm.Hidden
	b := state.Rows
	switch {
	case obs.Cols != m.in:
		panic(fmt.Sprintf("models: LSTMNet with %d inputs got observations %s", m.in, obs.shape()))
	case state.Cols != 2*hid || b == 0 || obs.Rows%b != 0:
		panic(fmt.Sprintf("models: LSTMNet state %s for observations %s; it must be [Bx%d] with B dividing the rows", state.shape(), obs.shape(), 2*hid))
	case next != nil && len(next) < b*2*hid:
		panic(fmt.Sprintf("models: LSTMNet next-state buffer holds %d values, needs %d", len(next), b*2*hid))
	}
	x := obs
	for _, d := range m.hidden {
		x = t.unary(m.activation, d.Forward(t, x), 0, 0)
	}
	var cLast []float64
	if next != nil {
		cLast = t.Const(b, hid, nil).Data // tape-owned scratch
	}
	h := m.lstm.Forward(t, x, t.Cols(state, 0, hid), t.Cols(state, hid, 2*hid), cLast)
	if next != nil {
		hLast := h.Data[(h.Rows-b)*hid:]
		for r := 0; r < b; r++ {
			copy(next[r*2*hid:r*2*hid+hid], hLast[r*hid:(r+1)*hid])
			copy(next[r*2*hid+hid:(r+1)*2*hid], cLast[r*hid:(r+1)*hid])
		}
	}
	o := Output{Last: h, Out: m.head.Forward(t, h)}
	if m.logStd != nil {
		o.Out = t.Concat(o.Out, t.RepeatRows(m.logStd, obs.Rows))
	}
	if m.vfHead != nil {
		o.Value = m.vfHead.Forward(t, h)
	}
	return o
}

var _ Recurrent = (*LSTMNet)(nil)
