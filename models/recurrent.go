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
// lstm_cell_size units over time, and a linear policy head on the LSTM's
// output. The value function (options.Value) is a second branch of the
// same shape with its own LSTM, unless vf_share_layers puts the value head
// on the policy's LSTM; a separate branch keeps the value loss, which is
// large early on, from swamping the policy's gradient. Its state per
// sequence is [h, c] of each LSTM: 2·H values, or 4·H with a separate
// value branch.
type LSTMNet struct {
	opts       ModelOptions
	in, out    int
	params     *Params
	pi, vf     *lstmBranch // vf is nil without a separate value branch
	head       *Dense
	logStd     *Tensor
	vfHead     *Dense
	activation opcode
}

// lstmBranch is fully connected layers followed by an LSTM.
type lstmBranch struct {
	hidden []*Dense
	lstm   *LSTMLayer
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
	branch := func(prefix string) (*lstmBranch, error) {
		br := &lstmBranch{}
		prev := numInputs
		for i, h := range opts.Hiddens {
			d := NewDense(m.params, fmt.Sprintf("%s%d", prefix, i), prev, h)
			if err := opts.Init.Apply(d.W, gain, rng); err != nil {
				return nil, err
			}
			br.hidden = append(br.hidden, d)
			prev = h
		}
		br.lstm = NewLSTMLayer(m.params, prefix+"_lstm", prev, opts.LSTMCellSize, rng)
		return br, nil
	}
	var err error
	if m.pi, err = branch("fc"); err != nil {
		return nil, err
	}
	cell := opts.LSTMCellSize
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
		if !opts.VFShareLayers {
			if m.vf, err = branch("vf"); err != nil {
				return nil, err
			}
		}
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

// StateSize implements Recurrent: h and c of every LSTM, lstm_cell_size
// values each.
func (m *LSTMNet) StateSize() int {
	if m.vf != nil {
		return 4 * m.opts.LSTMCellSize
	}
	return 2 * m.opts.LSTMCellSize
}

// Forward implements Model: every row is a sequence of one step from the
// zero state (callers that carry state use ForwardSeq).
func (m *LSTMNet) Forward(t *Tape, obs *Tensor) Output {
	return m.ForwardSeq(t, obs, t.Const(obs.Rows, m.StateSize(), nil), nil)
}

// ForwardSeq implements Recurrent.
func (m *LSTMNet) ForwardSeq(t *Tape, obs, state *Tensor, next []float64) Output {
	size := m.StateSize()
	b := state.Rows
	switch {
	case obs.Cols != m.in:
		panic(fmt.Sprintf("models: LSTMNet with %d inputs got observations %s", m.in, obs.shape()))
	case state.Cols != size || b == 0 || obs.Rows%b != 0:
		panic(fmt.Sprintf("models: LSTMNet state %s for observations %s; it must be [Bx%d] with B dividing the rows", state.shape(), obs.shape(), size))
	case next != nil && len(next) < b*size:
		panic(fmt.Sprintf("models: LSTMNet next-state buffer holds %d values, needs %d", len(next), b*size))
	}
	h := m.branch(t, m.pi, obs, state, 0, next)
	o := Output{Last: h, Out: m.head.Forward(t, h)}
	if m.logStd != nil {
		o.Out = t.Concat(o.Out, t.RepeatRows(m.logStd, obs.Rows))
	}
	if m.vfHead != nil {
		v := h
		if m.vf != nil {
			v = m.branch(t, m.vf, obs, state, 2*m.opts.LSTMCellSize, next)
		}
		o.Value = m.vfHead.Forward(t, v)
	}
	return o
}

// branch runs one branch whose state is columns [off, off+2H) of state,
// writing its state after the last step into the same columns of next.
func (m *LSTMNet) branch(t *Tape, br *lstmBranch, obs, state *Tensor, off int, next []float64) *Tensor {
	hid, b, size := br.lstm.Hidden, state.Rows, state.Cols
	x := obs
	for _, d := range br.hidden {
		x = t.unary(m.activation, d.Forward(t, x), 0, 0)
	}
	var cLast []float64
	if next != nil {
		cLast = t.Const(b, hid, nil).Data // tape-owned scratch
	}
	h := br.lstm.Forward(t, x, t.Cols(state, off, off+hid), t.Cols(state, off+hid, off+2*hid), cLast)
	if next != nil {
		hLast := h.Data[(h.Rows-b)*hid:]
		for r := 0; r < b; r++ {
			row := next[r*size+off : r*size+off+2*hid]
			copy(row[:hid], hLast[r*hid:(r+1)*hid])
			copy(row[hid:], cLast[r*hid:(r+1)*hid])
		}
	}
	return h
}

var _ Recurrent = (*LSTMNet)(nil)
