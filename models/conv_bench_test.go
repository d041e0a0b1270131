package models

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The catalog's default network for 42×42×1 images with PPO's model
// options: conv 16 4×4/2, 32 4×4/2, 256 11×11/1 valid (ReLU), then a
// 64-64 tanh policy head with 6 outputs and a 64-64 tanh value head on
// the 256 conv features. benchmarks/models/torch_conv.py builds the same
// network in PyTorch ("train-default", "act-default-N").
func newDefaultConvNet42(tb testing.TB) *ConvNet { return newDefaultConvNet(tb, []int{42, 42, 1}) }

// newDefaultConvNet is the catalog's default network with PPO's model
// options for images of the given shape: for 84×84×4 (four stacked
// frames, as Atari agents see them), conv 16 8×8/4, 32 4×4/2, 256 11×11/1
// valid, then the same heads ("train-default84", "act-default84-N").
func newDefaultConvNet(tb testing.TB, shape []int) *ConvNet {
	opts := DefaultModelOptions()
	opts.Value = true
	m, err := NewConvNet(shape, 6, opts, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func randImages(n int) []float64 { return randValues(n * 42 * 42) }

func randValues(n int) []float64 {
	obs := make([]float64, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range obs {
		obs[i] = rng.Float64()
	}
	return obs
}

// BenchmarkConvNetDefault42TrainStep measures forward, loss (mean squared
// policy outputs plus mean squared values), backward and Adam for the
// default 42×42 network on a batch of 32.
func BenchmarkConvNetDefault42TrainStep(b *testing.B) { benchConvTrain(b, []int{42, 42, 1}, false) }

// BenchmarkConvNetDefault84TrainStep is the same for the default 84×84×4
// network.
func BenchmarkConvNetDefault84TrainStep(b *testing.B) { benchConvTrain(b, []int{84, 84, 4}, false) }

// BenchmarkConvNetDefault42TrainStepFloat64 is
// BenchmarkConvNetDefault42TrainStep with the convolutions in float64
// (conv_float64), the reference path.
func BenchmarkConvNetDefault42TrainStepFloat64(b *testing.B) {
	benchConvTrain(b, []int{42, 42, 1}, true)
}

// BenchmarkConvNetDefault84TrainStepFloat64 is the same for the default
// 84×84×4 network.
func BenchmarkConvNetDefault84TrainStepFloat64(b *testing.B) {
	benchConvTrain(b, []int{84, 84, 4}, true)
}

func benchConvTrain(b *testing.B, shape []int, float64Convs bool) {
	m := newDefaultConvNet(b, shape)
	if float64Convs {
		m.prec = prec64
	}
	const n = 32
	in := m.NumInputs()
	obs := randValues(n * in)
	tape, opt, p := NewTape(), NewAdam(1e-3), m.Params()
	step := func() {
		tape.Reset()
		o := m.Forward(tape, tape.Const(n, in, obs))
		loss := tape.Add(tape.Mean(tape.Square(o.Out)), tape.Mean(tape.Square(o.Value)))
		p.ZeroGrad()
		tape.Backward(loss)
		_ = opt.Step(p.Flat(), p.Grads())
	}
	step()
	measure(b, step)
}

// BenchmarkConvNetDefault42Act measures the rollout forward pass (policy
// and value, no gradients) of the default 42×42 network at rollout batch
// sizes (with gradients off: the float32 path).
func BenchmarkConvNetDefault42Act(b *testing.B) { benchConvAct(b, []int{42, 42, 1}) }

// BenchmarkConvNetDefault84Act is the same for the default 84×84×4
// network.
func BenchmarkConvNetDefault84Act(b *testing.B) { benchConvAct(b, []int{84, 84, 4}) }

func benchConvAct(b *testing.B, shape []int) {
	m := newDefaultConvNet(b, shape)
	in := m.NumInputs()
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			obs := randValues(n * in)
			tape := NewTape()
			tape.SetNoGrad(true)
			act := func() {
				tape.Reset()
				m.Forward(tape, tape.Const(n, in, obs))
			}
			act()
			measure(b, act)
		})
	}
}
