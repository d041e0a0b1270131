package models

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ActionDist is a family of action distributions parametrised by a model's
// outputs. It is stateless: the methods take the distribution inputs (one
// row per observation), so one value serves every batch without
// allocating.
//
// The tape methods are differentiable in the inputs and return [batch×1]
// tensors; a distribution computed outside the process (a plugin) reports
// its failures through Tape.Err, as every tape operation does. Sample, Mode
// and LogProb are the fast path for rollouts: they read plain slices of
// rows (e.g. Output.Out.Data from a forward pass on a no-grad tape), record
// nothing, and return an error when the slices do not fit the distribution
// or an outside computation fails.
type ActionDist interface {
	// Name is "Categorical", "DiagGaussian" or "Deterministic" for the
	// built-in distributions, the custom_action_dist name for others.
	Name() string
	// InputSize is the number of model outputs per row it consumes.
	InputSize() int
	// ActionSize is the number of float64 values in one action.
	ActionSize() int
	// LogLikelihood returns log p(action) per row; actions is
	// [batch×ActionSize].
	LogLikelihood(t *Tape, inputs, actions *Tensor) *Tensor
	// Entropy returns the entropy per row.
	Entropy(t *Tape, inputs *Tensor) *Tensor
	// KL returns KL(p_inputs ‖ p_other) per row.
	KL(t *Tape, inputs, other *Tensor) *Tensor
	// Sample draws one action per input row into actions
	// (len = rows·ActionSize), drawing its randomness from rng only.
	Sample(rng *rand.Rand, inputs, actions []float64) error
	// Mode writes the most likely action of each row (argmax, mean).
	Mode(inputs, actions []float64) error
	// LogProb writes log p(action) of each row into logp (len = rows).
	LogProb(inputs, actions, logp []float64) error
}

// log2Pi is log(2π).
const log2Pi = 1.8378770664093454835606594728112

// checkRows returns the number of rows in inputs, checking that inputs
// are whole rows and that actions (and logp, when not nil) hold as many.
func checkRows(name string, inputs []float64, in int, actions []float64, act int, logp []float64) (int, error) {
	rows := len(inputs) / in
	if rows*in != len(inputs) || len(actions) < rows*act || (logp != nil && len(logp) < rows) {
		return 0, fmt.Errorf("models: %s: %d inputs (%d per row), %d action values (%d per row) and %d log-probabilities do not fit",
			name, len(inputs), in, len(actions), act, len(logp))
	}
	return rows, nil
}

// Categorical is a distribution over N discrete actions given N logits.
// An action is one float64 holding the index.
type Categorical struct{ N int }

// Name implements ActionDist.
func (d Categorical) Name() string { return "Categorical" }

// InputSize implements ActionDist.
func (d Categorical) InputSize() int { return d.N }

// ActionSize implements ActionDist.
func (d Categorical) ActionSize() int { return 1 }

// LogLikelihood implements ActionDist.
func (d Categorical) LogLikelihood(t *Tape, logits, actions *Tensor) *Tensor {
	return t.Gather(t.LogSoftmax(logits), actions)
}

// Entropy implements ActionDist: -Σ p·log p.
func (d Categorical) Entropy(t *Tape, logits *Tensor) *Tensor {
	lp := t.LogSoftmax(logits)
	return t.Neg(t.RowSum(t.Mul(t.Exp(lp), lp)))
}

// KL implements ActionDist: Σ p·(log p - log q).
func (d Categorical) KL(t *Tape, logits, other *Tensor) *Tensor {
	lp := t.LogSoftmax(logits)
	lq := t.LogSoftmax(other)
	return t.RowSum(t.Mul(t.Exp(lp), t.Sub(lp, lq)))
}

// Sample implements ActionDist by inverting the cumulative softmax.
func (d Categorical) Sample(rng *rand.Rand, inputs, actions []float64) error {
	rows, err := checkRows("Categorical.Sample", inputs, d.N, actions, 1, nil)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		row := inputs[i*d.N : (i+1)*d.N]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		total := 0.0
		for _, v := range row {
			total += math.Exp(v - m)
		}
		u := rng.Float64() * total
		a := d.N - 1
		for j, v := range row {
			u -= math.Exp(v - m)
			if u < 0 {
				a = j
				break
			}
		}
		actions[i] = float64(a)
	}
	return nil
}

// Mode implements ActionDist: the index of the largest logit.
func (d Categorical) Mode(inputs, actions []float64) error {
	rows, err := checkRows("Categorical.Mode", inputs, d.N, actions, 1, nil)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		row := inputs[i*d.N : (i+1)*d.N]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		actions[i] = float64(best)
	}
	return nil
}

// LogProb implements ActionDist.
func (d Categorical) LogProb(inputs, actions, logp []float64) error {
	rows, err := checkRows("Categorical.LogProb", inputs, d.N, actions, 1, logp)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		row := inputs[i*d.N : (i+1)*d.N]
		a := int(actions[i])
		if a < 0 || a >= d.N {
			logp[i] = math.Inf(-1)
			continue
		}
		logp[i] = row[a] - logSumExp(row)
	}
	return nil
}

// DiagGaussian is a Gaussian with diagonal covariance over K-dimensional
// actions. Its 2K inputs are the K means followed by the K log standard
// deviations. Samples are not clipped to the action space's bounds; the
// caller clips what it sends to the environment.
type DiagGaussian struct{ K int }

// Name implements ActionDist.
func (d DiagGaussian) Name() string { return "DiagGaussian" }

// InputSize implements ActionDist.
func (d DiagGaussian) InputSize() int { return 2 * d.K }

// ActionSize implements ActionDist.
func (d DiagGaussian) ActionSize() int { return d.K }

func (d DiagGaussian) split(t *Tape, in *Tensor) (mean, logStd *Tensor) {
	if in.Cols != 2*d.K {
		panic(fmt.Sprintf("models: DiagGaussian(%d) needs %d inputs per row, got %s", d.K, 2*d.K, in.shape()))
	}
	return t.Cols(in, 0, d.K), t.Cols(in, d.K, 2*d.K)
}

// LogLikelihood implements ActionDist:
// -½Σ((x-μ)/σ)² - Σ log σ - ½K·log 2π.
func (d DiagGaussian) LogLikelihood(t *Tape, inputs, actions *Tensor) *Tensor {
	mean, logStd := d.split(t, inputs)
	z := t.Div(t.Sub(actions, mean), t.Exp(logStd))
	ll := t.Sub(t.Scale(t.RowSum(t.Square(z)), -0.5), t.RowSum(logStd))
	return t.AddScalar(ll, -0.5*float64(d.K)*log2Pi)
}

// Entropy implements ActionDist: Σ log σ + ½K·(1 + log 2π).
func (d DiagGaussian) Entropy(t *Tape, inputs *Tensor) *Tensor {
	_, logStd := d.split(t, inputs)
	return t.AddScalar(t.RowSum(logStd), 0.5*float64(d.K)*(1+log2Pi))
}

// KL implements ActionDist:
// Σ log σq - log σp + (σp² + (μp-μq)²)/(2σq²) - ½.
func (d DiagGaussian) KL(t *Tape, inputs, other *Tensor) *Tensor {
	mp, lp := d.split(t, inputs)
	mq, lq := d.split(t, other)
	num := t.Add(t.Exp(t.Scale(lp, 2)), t.Square(t.Sub(mp, mq)))
	ratio := t.Div(num, t.Exp(t.Scale(lq, 2)))
	kl := t.Add(t.RowSum(t.Sub(lq, lp)), t.Scale(t.RowSum(ratio), 0.5))
	return t.AddScalar(kl, -0.5*float64(d.K))
}

// Sample implements ActionDist: μ + σ·N(0, 1).
func (d DiagGaussian) Sample(rng *rand.Rand, inputs, actions []float64) error {
	k := d.K
	rows, err := checkRows("DiagGaussian.Sample", inputs, 2*k, actions, k, nil)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		row := inputs[i*2*k : (i+1)*2*k]
		for j := 0; j < k; j++ {
			actions[i*k+j] = row[j] + math.Exp(row[k+j])*rng.NormFloat64()
		}
	}
	return nil
}

// Mode implements ActionDist: the means.
func (d DiagGaussian) Mode(inputs, actions []float64) error {
	k := d.K
	rows, err := checkRows("DiagGaussian.Mode", inputs, 2*k, actions, k, nil)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		copy(actions[i*k:(i+1)*k], inputs[i*2*k:i*2*k+k])
	}
	return nil
}

// LogProb implements ActionDist.
func (d DiagGaussian) LogProb(inputs, actions, logp []float64) error {
	k := d.K
	rows, err := checkRows("DiagGaussian.LogProb", inputs, 2*k, actions, k, logp)
	if err != nil {
		return err
	}
	for i := 0; i < rows; i++ {
		row := inputs[i*2*k : (i+1)*2*k]
		s := -0.5 * float64(k) * log2Pi
		for j := 0; j < k; j++ {
			z := (actions[i*k+j] - row[j]) / math.Exp(row[k+j])
			s -= 0.5*z*z + row[k+j]
		}
		logp[i] = s
	}
	return nil
}

// Deterministic returns its K inputs as the action: a DiagGaussian with
// zero standard deviation. It has no density, so LogLikelihood, Entropy and
// KL are zero constants (they carry no gradient); algorithms that use it
// (ES, deterministic evaluation) act on the output directly.
type Deterministic struct{ K int }

// Name implements ActionDist.
func (d Deterministic) Name() string { return "Deterministic" }

// InputSize implements ActionDist.
func (d Deterministic) InputSize() int { return d.K }

// ActionSize implements ActionDist.
func (d Deterministic) ActionSize() int { return d.K }

// LogLikelihood implements ActionDist (zero; see the type's comment).
func (d Deterministic) LogLikelihood(t *Tape, inputs, _ *Tensor) *Tensor {
	return t.Const(inputs.Rows, 1, nil)
}

// Entropy implements ActionDist (zero).
func (d Deterministic) Entropy(t *Tape, inputs *Tensor) *Tensor { return t.Const(inputs.Rows, 1, nil) }

// KL implements ActionDist (zero; see the type's comment).
func (d Deterministic) KL(t *Tape, inputs, _ *Tensor) *Tensor { return t.Const(inputs.Rows, 1, nil) }

// Sample implements ActionDist: the inputs themselves.
func (d Deterministic) Sample(_ *rand.Rand, inputs, actions []float64) error {
	return d.Mode(inputs, actions)
}

// Mode implements ActionDist: the inputs themselves.
func (d Deterministic) Mode(inputs, actions []float64) error {
	rows, err := checkRows("Deterministic.Mode", inputs, d.K, actions, d.K, nil)
	if err != nil {
		return err
	}
	copy(actions[:rows*d.K], inputs)
	return nil
}

// LogProb implements ActionDist (zero).
func (d Deterministic) LogProb(inputs, actions, logp []float64) error {
	rows, err := checkRows("Deterministic.LogProb", inputs, d.K, actions, d.K, logp)
	if err != nil {
		return err
	}
	clear(logp[:rows])
	return nil
}
