package dqn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gray-ml/gray/rllib"
)

// BenchmarkLearnStep measures one gradient step (replay sampling, double-Q
// targets, forward, backward, clipping, Adam) on a CartPole buffer.
func BenchmarkLearnStep(b *testing.B) {
	for _, bc := range []struct {
		hiddens []int
		batch   int
		dueling bool
	}{
		{[]int{64, 64}, 64, true},
		{[]int{64, 64}, 64, false},
		{[]int{256, 256}, 64, true},
		{[]int{64, 64}, 128, true},
	} {
		name := fmt.Sprintf("%dx%d/batch%d/dueling=%v", bc.hiddens[0], bc.hiddens[1], bc.batch, bc.dueling)
		b.Run(name, func(b *testing.B) {
			a, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1", Seed: 1}, map[string]any{
				"model": map[string]any{"fcnet_hiddens": bc.hiddens}, "train_batch_size": bc.batch,
				"dueling": bc.dueling, "learning_starts": 1_000_000, "timesteps_per_iteration": 5000,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Stop()
			if _, err := a.Train(context.Background()); err != nil { // fills the buffer
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := a.learner.step(a.buf, rng, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkSample measures ε-greedy sampling with n-step assembly in the
// driver (one CartPole, 64-64 network).
func BenchmarkSample(b *testing.B) {
	a, err := newFromKeys(context.Background(), rllib.Options{Env: "CartPole-v1", Seed: 1}, map[string]any{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Stop()
	s := a.samplers.(*localSampler)
	b.ReportAllocs()
	b.ResetTimer()
	steps := 0
	for i := range b.N {
		out, err := s.w.sample(context.Background(), SampleRequest{Round: int64(i), Steps: 256, Stride: 1})
		if err != nil {
			b.Fatal(err)
		}
		steps += out.Steps
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "env-steps/s")
}
