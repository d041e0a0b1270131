package models

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func lstmOpts() ModelOptions {
	o := DefaultModelOptions()
	o.Hiddens = []int{5}
	o.UseLSTM, o.LSTMCellSize, o.Value, o.FreeLogStd = true, 3, true, true
	return o
}

// TestLSTMNetGradients checks the whole network's parameter gradients
// through ForwardSeq (policy and value outputs over two sequences of three
// steps from a non-zero state) against central differences, with a
// separate and with a shared value branch.
func TestLSTMNetGradients(t *testing.T) {
	for _, share := range []bool{false, true} {
		opts := lstmOpts()
		opts.VFShareLayers = share
		m, err := NewLSTMNet(2, 4, opts, 5)
		if err != nil {
			t.Fatal(err)
		}
		checkLSTMNetGradients(t, m)
	}
}

func checkLSTMNetGradients(t *testing.T, m *LSTMNet) {
	const steps, b = 3, 2
	rng := rand.New(rand.NewPCG(5, 6))
	obs := make([]float64, steps*b*2)
	state := make([]float64, b*m.StateSize())
	wts := make([]float64, steps*b*5)
	for _, xs := range [][]float64{obs, state, wts} {
		for i := range xs {
			xs[i] = rng.NormFloat64()
		}
	}
	tape := NewTape()
	loss := func() *Tensor {
		tape.Reset()
		o := m.ForwardSeq(tape, tape.Const(steps*b, 2, obs), tape.Const(b, m.StateSize(), state), nil)
		out := tape.Concat(o.Out, o.Value)
		return tape.Sum(tape.Mul(out, tape.Const(out.Rows, out.Cols, wts)))
	}
	p := m.Params()
	p.ZeroGrad()
	tape.Backward(loss())
	analytic := p.GetFlatGrad(nil)
	w := p.Flat()
	for i := range w {
		orig := w[i]
		w[i] = orig + 1e-6
		up := loss().Item()
		w[i] = orig - 1e-6
		down := loss().Item()
		w[i] = orig
		num := (up - down) / 2e-6
		if math.Abs(num-analytic[i]) > 1e-5*(1+math.Abs(num)) {
			t.Fatalf("param %d of %d: analytic %g, numeric %g", i, len(w), analytic[i], num)
		}
	}
}

// TestLSTMNetCarriesState checks that one call over a whole sequence and
// step-by-step calls that pass the state along agree, and that the state
// matters: the same observation from a different state gives a different
// output.
func TestLSTMNetCarriesState(t *testing.T) {
	m, err := NewModel([]int{2}, 2, lstmOpts(), 9)
	if err != nil {
		t.Fatal(err)
	}
	rm, ok := m.(Recurrent)
	if !ok {
		t.Fatalf("NewModel with use_lstm built %T, not a Recurrent model", m)
	}
	const steps = 4
	obs := []float64{0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8}
	s := rm.StateSize()
	tape := NewTape()
	whole := rm.ForwardSeq(tape, tape.Const(steps, 2, obs), tape.Const(1, s, nil), nil)
	wantOut := append([]float64(nil), whole.Out.Data...)
	wantV := append([]float64(nil), whole.Value.Data...)
	state := make([]float64, s)
	next := make([]float64, s)
	for k := range steps {
		tape.Reset()
		o := rm.ForwardSeq(tape, tape.Const(1, 2, obs[2*k:2*k+2]), tape.Const(1, s, state), next)
		for j, v := range o.Out.Data {
			if math.Abs(v-wantOut[k*2+j]) > 1e-12 {
				t.Fatalf("step %d: stepwise output %v, whole-sequence %v", k, o.Out.Data, wantOut[k*2:k*2+2])
			}
		}
		if math.Abs(o.Value.Data[0]-wantV[k]) > 1e-12 {
			t.Fatalf("step %d: stepwise value %v, whole-sequence %v", k, o.Value.Data[0], wantV[k])
		}
		copy(state, next)
	}
	tape.Reset()
	fresh := rm.Forward(tape, tape.Const(1, 2, obs[6:8]))
	if math.Abs(fresh.Value.Data[0]-wantV[steps-1]) < 1e-9 {
		t.Fatal("the last observation gives the same value from the zero state as after three steps: the state has no effect")
	}
}

func TestLSTMOptionErrorsNameTheKey(t *testing.T) {
	o := lstmOpts()
	o.LSTMCellSize = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "lstm_cell_size") {
		t.Fatalf("lstm_cell_size 0: %v", err)
	}
	o = lstmOpts()
	o.MaxSeqLen = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "max_seq_len") {
		t.Fatalf("max_seq_len 0: %v", err)
	}
	o = lstmOpts()
	if _, err := NewModel([]int{42, 42, 1}, 2, o, 1); err == nil || !strings.Contains(err.Error(), "use_lstm") {
		t.Fatalf("use_lstm on images: %v", err)
	}
	o.CustomModel = "plugin:/x"
	if _, err := NewModel([]int{4}, 2, o, 1); err == nil || !strings.Contains(err.Error(), "use_lstm") {
		t.Fatalf("use_lstm with a custom model: %v", err)
	}
	if err := lstmOpts().CheckFeedForward("DQN"); err == nil || !strings.Contains(err.Error(), "model.use_lstm") || !strings.Contains(err.Error(), "DQN") {
		t.Fatalf("CheckFeedForward: %v", err)
	}
	if err := DefaultModelOptions().CheckFeedForward("DQN"); err != nil {
		t.Fatalf("CheckFeedForward without use_lstm: %v", err)
	}
}

func TestLSTMKeysDecode(t *testing.T) {
	o := DefaultModelOptions()
	if err := json.Unmarshal([]byte(`{"use_lstm": true, "lstm_cell_size": 32, "max_seq_len": 8}`), &o); err != nil {
		t.Fatal(err)
	}
	if !o.UseLSTM || o.LSTMCellSize != 32 || o.MaxSeqLen != 8 || len(o.Hiddens) != 2 {
		t.Fatalf("decoded %+v", o)
	}
}
