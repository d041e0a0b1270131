package models

import (
	"math"
	"slices"
	"testing"
)

// A network with a value network of its own has two towers whose outputs
// and gradients, each computed on a tape of its own, are the whole
// network's bit for bit; networks whose value output shares layers, or
// that have none, have no towers.
func TestTowersSameAsForward(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   ModelOptions
		out    int
		towers bool
	}{
		{"separate value network", ModelOptions{Hiddens: []int{16, 8}, Value: true}, 3, true},
		{"relu, free log std", ModelOptions{Hiddens: []int{8}, Activation: "relu", FreeLogStd: true, Value: true}, 4, true},
		{"no hidden layers", ModelOptions{Value: true}, 2, true},
		{"shared layers", ModelOptions{Hiddens: []int{8}, Value: true, VFShareLayers: true}, 2, false},
		{"no value output", ModelOptions{Hiddens: []int{8}}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewFullyConnected(5, tc.out, tc.opts, 3)
			if err != nil {
				t.Fatal(err)
			}
			pol, val, ok := m.Towers()
			if ok != tc.towers {
				t.Fatalf("Towers ok = %v, want %v", ok, tc.towers)
			}
			if !ok {
				return
			}
			if pol.Params.Len()+val.Params.Len() != m.Params().Len() {
				t.Fatalf("towers of %d and %d weights; the network has %d", pol.Params.Len(), val.Params.Len(), m.Params().Len())
			}
			obs := randVec(7, 6*5)
			// The whole network: a loss of both outputs on one tape.
			whole := NewTape()
			x := whole.Const(6, 5, obs)
			o := m.Forward(whole, x)
			whole.BackwardSet(whole.Add(whole.Mean(whole.Square(o.Out)), whole.Mean(o.Value)), m.Params())
			wantOut, wantValue := slices.Clone(o.Out.Data), slices.Clone(o.Value.Data)
			wantGrad := slices.Clone(m.Params().Grads())
			// The towers: each output's term on its own tape, starting
			// from gradients full of NaN (each tower writes its own).
			for i := range m.Params().Grads() {
				m.Params().Grads()[i] = math.NaN()
			}
			tp, tv := NewTape(), NewTape()
			out := pol.Forward(tp, tp.Const(6, 5, obs))
			tp.BackwardSet(tp.Mean(tp.Square(out)), pol.Params)
			value := val.Forward(tv, tv.Const(6, 5, obs))
			tv.BackwardSet(tv.Mean(value), val.Params)
			if !slices.Equal(out.Data, wantOut) || !slices.Equal(value.Data, wantValue) {
				t.Error("the towers' outputs differ from Forward's")
			}
			if !slices.Equal(m.Params().Grads(), wantGrad) {
				t.Error("the towers' gradients differ from the whole network's")
			}
			// The views are the network's memory.
			pol.Params.Flat()[0] += 1
			if m.Params().Flat()[0] != pol.Params.Flat()[0] {
				t.Error("the policy tower's weights are a copy, not a view")
			}
		})
	}
}

// Slice views a run of tensors and rejects a range outside them.
func TestParamsSlice(t *testing.T) {
	p := NewParams()
	p.New("a", 2, 3)
	p.New("b", 1, 4)
	p.New("c", 5, 1)
	s := p.Slice(1, 3)
	if s.Len() != 9 || !slices.Equal(s.Names(), []string{"b", "c"}) || s.Signature() != "b[1x4] c[5x1]" {
		t.Fatalf("Slice(1, 3): %d weights, names %v", s.Len(), s.Names())
	}
	s.Grads()[0] = 2
	if p.Grads()[6] != 2 {
		t.Error("the view's gradients are not the set's")
	}
	defer func() {
		if recover() == nil {
			t.Error("Slice(2, 4) of 3 tensors did not panic")
		}
	}()
	p.Slice(2, 4)
}
