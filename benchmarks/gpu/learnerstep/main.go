// Command learnerstep times one PPO minibatch step (forward, loss,
// backward, global-norm clipping, Adam) of the PixelPong network on the
// GPU through models/cuda: 2×40×40 input, conv 16 4×4 stride 4, dense 128
// ReLU, 7 logits and a value head on the shared layers, Adam. The same
// step in PyTorch CUDA is benchmarks/gpu/torch_step.py; benchmarks/gpu/run.sh
// runs both in one go.
//
//	learnerstep -batch 256,2048 -steps 400
//
// It prints one line per batch size: "gray-cuda batch=256 ms/step=0.123".
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/models/cuda"
)

func main() {
	batches := flag.String("batch", "256,2048", "minibatch sizes, comma-separated")
	steps := flag.Int("steps", 400, "timed minibatch steps per size (after a warm-up of a tenth as many)")
	flag.Parse()
	d, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	fmt.Println("device:", d)
	for _, f := range strings.Split(*batches, ",") {
		mb, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || mb < 1 {
			log.Fatalf("-batch %q: want positive sizes", *batches)
		}
		ms, err := timeStep(d, mb, *steps)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("gray-cuda batch=%d ms/step=%.4f\n", mb, ms)
	}
}

// pixelPongModel is the network of configs/pixelpong-ppo.yaml.
func pixelPongModel() (models.Model, error) {
	o := models.DefaultModelOptions()
	o.ConvFilters = []models.ConvFilter{{Out: 16, KH: 4, KW: 4, Stride: 4}}
	o.Hiddens, o.Activation, o.VFShareLayers, o.Value = []int{128}, "relu", true, true
	return models.NewModel([]int{40, 40, 2}, 7, o, 1)
}

// timeStep runs Learn over a batch of 8 minibatches, enough epochs for
// steps steps, and returns the mean time of one minibatch step (the
// batch's upload included, as in training).
func timeStep(d *cuda.Device, mb, steps int) (float64, error) {
	m, err := pixelPongModel()
	if err != nil {
		return 0, err
	}
	l, err := cuda.NewPPOLearner(d, m, mb, cuda.PPOConfig{ClipParam: 0.1, VFLossCoeff: 0.5, EntropyCoeff: 0.01, GradClip: 0.5})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	const perEpoch = 8
	n := perEpoch * mb
	rng := rand.New(rand.NewPCG(1, 2))
	b := &cuda.PPOBatch{N: n, Obs: make([]float64, n*m.NumInputs()), Act: make([]float64, n), Logp: make([]float64, n),
		Adv: make([]float64, n), VTarg: make([]float64, n), VPred: make([]float64, n), Dist: make([]float64, n*7)}
	for i := range b.Obs {
		b.Obs[i] = rng.Float64() - 0.5
	}
	for i := 0; i < n; i++ {
		b.Act[i], b.Logp[i], b.Adv[i], b.VTarg[i] = float64(rng.IntN(7)), -2, rng.NormFloat64(), rng.NormFloat64()
	}
	shuffle := func(p []int) { rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] }) }
	run := func(k int) error {
		epochs := max(1, k/perEpoch)
		_, err := l.Learn(b, epochs, mb, shuffle, 5e-4, 0)
		if err != nil {
			return err
		}
		return d.Sync()
	}
	if err := run(max(perEpoch, steps/10)); err != nil {
		return 0, err
	}
	epochs := max(1, steps/perEpoch)
	start := time.Now()
	if err := run(epochs * perEpoch); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(epochs*perEpoch), nil
}
