// Package hyperopt holds what the hyperparameter-search examples share: the
// hyperparameters of the seeds' convolutional-network example and a
// stand-in for training it. The seeds train a CNN on MNIST; these examples
// replace that with a cheap synthetic validation accuracy, peaked at a
// learning rate of 1e-3, a batch size near 64, dropout 0.3 and weight
// stddev 1e-2, that improves with training steps and is noisy, so the
// search logic is what the examples show.
package hyperopt

import (
	"math"
	"math/rand/v2"
	"time"
)

// Hyperparameters are the four values the seeds search over.
type Hyperparameters struct {
	LearningRate float64 `cbor:"learning_rate" json:"learning_rate"`
	BatchSize    int     `cbor:"batch_size" json:"batch_size"`
	Dropout      float64 `cbor:"dropout" json:"dropout"`
	Stddev       float64 `cbor:"stddev" json:"stddev"`
}

// Generate draws hyperparameters as the seeds' generate_hyperparameters
// does: log-uniform learning rate and stddev over [1e-5, 1e5), batch size
// uniform in [1, 100), dropout uniform in [0, 1).
func Generate(rng *rand.Rand) Hyperparameters {
	return Hyperparameters{
		LearningRate: math.Pow(10, -5+10*rng.Float64()),
		BatchSize:    1 + rng.IntN(99),
		Dropout:      rng.Float64(),
		Stddev:       math.Pow(10, -5+10*rng.Float64()),
	}
}

// Model is the state a training segment continues from.
type Model struct {
	Steps int `cbor:"steps" json:"steps"`
}

// Train "trains" for steps more steps from model (nil: from scratch) and
// returns the validation accuracy and the updated model. stepTime is the
// simulated cost of one step.
func Train(hp Hyperparameters, model *Model, steps int, stepTime time.Duration, seed uint64) (float64, Model) {
	m := Model{}
	if model != nil {
		m = *model
	}
	m.Steps += steps
	time.Sleep(time.Duration(steps) * stepTime)
	// Quality in (0, 1]: 1 at the best hyperparameters.
	q := math.Exp(-sq(math.Log10(hp.LearningRate)+3)/4 - sq(math.Log2(float64(hp.BatchSize)/64))/8 -
		sq(hp.Dropout-0.3)*2 - sq(math.Log10(hp.Stddev)+2)/8)
	progress := 1 - math.Exp(-float64(m.Steps)/50)
	rng := rand.New(rand.NewPCG(seed, uint64(m.Steps)))
	acc := 0.1 + 0.89*q*progress + 0.01*rng.NormFloat64()
	return math.Max(0, math.Min(1, acc)), m
}

func sq(x float64) float64 { return x * x }
