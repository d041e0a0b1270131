package ppo

import (
	"context"
	"testing"

	"github.com/gray-ml/gray/rllib"
	"github.com/gray-ml/gray/rllib/sample"
)

// benchAgent builds a CartPole agent and one batch with advantages.
func benchAgent(b *testing.B, cfg map[string]any) (*Agent, sample.Batch) {
	b.Helper()
	ctx := context.Background()
	a, err := newFromKeys(ctx, rllib.Options{Env: "CartPole-v1", Seed: 1}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop() })
	parts, err := a.samplers.sample(ctx, a)
	if err != nil {
		b.Fatal(err)
	}
	batch := parts[0].Batch
	if err := sample.ComputeGAE(&batch, 0.99, 0.95); err != nil {
		b.Fatal(err)
	}
	return a, batch
}

// BenchmarkLearn measures SGD throughput (learner rows per second) on a
// CartPole batch for several network, batch and minibatch sizes.
func BenchmarkLearn(b *testing.B) {
	for _, bc := range []struct {
		name    string
		hiddens []int
		batch   int
		mb      int
	}{
		{"64x64/batch2048/mb128", []int{64, 64}, 2048, 128},
		{"64x64/batch2048/mb256", []int{64, 64}, 2048, 256},
		{"32x32/batch2048/mb128", []int{32, 32}, 2048, 128},
		{"32x32/batch512/mb128", []int{32, 32}, 512, 128},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, batch := benchAgent(b, map[string]any{
				"train_batch_size": bc.batch, "sgd_minibatch_size": bc.mb,
				"model": map[string]any{"fcnet_hiddens": bc.hiddens},
			})
			b.ResetTimer()
			rows := 0
			for i := 0; i < b.N; i++ {
				if _, err := a.learner.learn(context.Background(), &batch, 3e-4, 0.2, shuffleRNG(1, i)); err != nil {
					b.Fatal(err)
				}
				rows += batch.Len() * a.Cfg.NumSGDIter
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkSample measures sampling throughput of the local worker.
func BenchmarkSample(b *testing.B) {
	a, _ := benchAgent(b, nil)
	ctx := context.Background()
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		parts, err := a.samplers.sample(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		rows += parts[0].Batch.Len()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "steps/s")
}
