// Package resnet_test times one training step of the ResNet of
// examples/resnet (widths 8, 16, 32; one block per stage) on a batch of
// Fashion-MNIST-sized images, forward, backward and momentum-SGD update,
// on one thread. resnet_torch.py times the same network in PyTorch, also
// on one thread; run both in the same session:
//
//	GOMAXPROCS=1 go test -run '^$' -bench . -benchtime 20x ./benchmarks/resnet
//	/usr/bin/python3 benchmarks/resnet/resnet_torch.py --steps 20  # Debian python3-torch
//
// Figures are recorded in benchmarks/results/fashion-mnist.md.
package resnet_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gray-ml/gray/models"
)

func BenchmarkResNetStep(b *testing.B) {
	for _, batch := range []int{32, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			net, err := models.NewResNet(models.ResNetConfig{H: 28, W: 28, C: 1, Classes: 10, Widths: []int{8, 16, 32}, Blocks: 1}, 1)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float64, batch*784)
			y := make([]float64, batch)
			for i := range x {
				x[i] = rng.Float64()
			}
			for i := range y {
				y[i] = float64(rng.IntN(10))
			}
			opt := &models.SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}
			t := models.NewTape()
			p := net.Params()
			step := func() {
				t.Reset()
				loss := t.SoftmaxCrossEntropy(net.Forward(t, t.Const(batch, 784, x), true), t.Const(batch, 1, y))
				p.ZeroGrad()
				t.Backward(loss)
				if err := opt.Step(p.Flat(), p.Grads()); err != nil {
					b.Fatal(err)
				}
			}
			step()
			b.ResetTimer()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
