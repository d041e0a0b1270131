package envs

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomActions precomputes a cycle of random actions so that drawing them
// is not part of what is measured.
func randomActions(space Space, n int) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]float64, n)
	for i := range out {
		out[i] = space.Sample(rng)
	}
	return out
}

func reportStepsPerSec(b *testing.B, steps int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(steps)/s, "steps/s")
	}
}

// BenchmarkEnvStep measures Env.Step of each built-in environment under a
// random policy, resets included.
func BenchmarkEnvStep(b *testing.B) {
	for _, name := range classicNames() {
		b.Run(name, func(b *testing.B) {
			e := mustMake(b, name, nil)
			acts := randomActions(e.ActionSpace(), 1024)
			seed := int64(0)
			_, _ = e.Reset(seed)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := e.Step(acts[i&1023])
				if err != nil {
					b.Fatal(err)
				}
				if s.Done() {
					seed++
					_, _ = e.Reset(seed)
				}
			}
			reportStepsPerSec(b, b.N)
		})
	}
}

// BenchmarkCartPoleVector measures a Vector of n CartPoles under a random
// policy with automatic resets, through Step (caller-owned results),
// StepInto (reused buffers) and Step on the generic path that custom
// environments take.
func BenchmarkCartPoleVector(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		for _, mode := range []string{"Step", "StepInto", "Step-generic"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				v := mustVector(b, "CartPole-v1", n)
				if mode == "Step-generic" {
					// The path a custom (non-built-in) environment takes.
					plain := make([]Env, n)
					for i := range plain {
						plain[i] = plainEnv{mustMake(b, "CartPole-v1", nil)}
					}
					var err error
					if v, err = NewVector(plain...); err != nil {
						b.Fatal(err)
					}
				}
				_, _ = v.Reset(seedRange(n, 0))
				pool := randomActions(v.ActionSpace(), 1024+n)
				var out VectorStep
				ip := v.(InPlaceStepper)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					acts := pool[i&1023 : i&1023+n]
					var err error
					if mode == "StepInto" {
						err = ip.StepInto(acts, &out)
					} else {
						_, err = v.Step(acts)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				reportStepsPerSec(b, b.N*n)
			})
		}
	}
}

// BenchmarkPixelPong measures PixelPong-v0 under a fixed action cycle,
// resets included, through the allocation-free path a Vector's StepInto
// takes; frames/s counts emulated frames (4 per step). The peer is copying
// one frame's observation (806 KB of float64), a floor on any step that
// hands out a fresh float64 frame.
func BenchmarkPixelPong(b *testing.B) {
	b.Run("step", func(b *testing.B) {
		e, err := NewPixelPong(nil)
		if err != nil {
			b.Fatal(err)
		}
		obs := make([]float64, pongFrameSize)
		e.resetInto(0, obs)
		act := []float64{0}
		seed := int64(0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			act[0] = float64(i % 6)
			if _, term, trunc := e.stepInto(act, obs); term || trunc {
				seed++
				e.resetInto(seed, obs)
			}
		}
		if s := b.Elapsed().Seconds(); s > 0 {
			b.ReportMetric(float64(b.N)/s, "steps/s")
			b.ReportMetric(float64(b.N*e.frameSkip)/s, "frames/s")
		}
	})
	b.Run("peer-memcpy-obs", func(b *testing.B) {
		src, dst := make([]float64, pongFrameSize), make([]float64, pongFrameSize)
		b.SetBytes(pongFrameSize * 8)
		for i := 0; i < b.N; i++ {
			copy(dst, src)
		}
	})
}
