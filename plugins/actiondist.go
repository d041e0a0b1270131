package plugins

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/models"
)

// ActionDist makes a distribution plugin a models.ActionDist, so that it
// can stand in for a built-in distribution: its tape methods are
// Tape.Apply steps whose gradients come from the plugin (a failure shows
// in Tape.Err), and Sample, Mode and LogProb return the plugin's errors.
// Sample draws the seed of the plugin's random source from the host's
// generator, so a run stays reproducible.
//
// The methods may be called from several goroutines (PPO's gradient
// shards share one distribution); the plugin answers one call at a time.
type ActionDist struct {
	d    *Distribution
	name string
}

var _ models.ActionDist = (*ActionDist)(nil)

// NewActionDist adapts d; name is what Name reports (the
// custom_action_dist name, for instance).
func NewActionDist(d *Distribution, name string) *ActionDist { return &ActionDist{d: d, name: name} }

// CatalogActionDist starts the distribution plugin at path over
// actionSpace and adapts it: what the catalog hook for "plugin:<path>"
// distributions calls. The process lives until Close or the host's exit.
func CatalogActionDist(path string, cfg map[string]any, actionSpace envs.Space) (*ActionDist, error) {
	d, err := NewDistribution(context.Background(), path, cfg, actionSpace, Options{})
	if err != nil {
		return nil, err
	}
	return NewActionDist(d, Prefix+path), nil
}

// distResolver builds a distribution plugin named in a model config's
// custom_action_dist ("plugin:<path>"), with custom_action_dist_options as
// its config.
func distResolver(name string, space envs.Space, options map[string]any) (models.ActionDist, error) {
	path := strings.TrimPrefix(name, Prefix)
	if err := checkExecutable(path); err != nil {
		return nil, err
	}
	return CatalogActionDist(path, options, space)
}

// Name implements models.ActionDist.
func (a *ActionDist) Name() string { return a.name }

// InputSize implements models.ActionDist.
func (a *ActionDist) InputSize() int { return a.d.inSize }

// ActionSize implements models.ActionDist.
func (a *ActionDist) ActionSize() int { return a.d.aDim }

// Close stops the plugin process.
func (a *ActionDist) Close() error { return a.d.Close() }

// rows checks that inputs are whole rows and that actions (and logp, when
// not nil) hold as many.
func (a *ActionDist) rows(op string, inputs, actions, logp []float64) (int, error) {
	n := len(inputs) / a.d.inSize
	if n*a.d.inSize != len(inputs) || len(actions) < n*a.d.aDim || (logp != nil && len(logp) < n) {
		return 0, fmt.Errorf("plugin distribution %s: %s: %d inputs (%d per row), %d action values (%d per row) and %d log-probabilities do not fit",
			a.d.proc.path, op, len(inputs), a.d.inSize, len(actions), a.d.aDim, len(logp))
	}
	return n, nil
}

// Sample implements models.ActionDist.
func (a *ActionDist) Sample(rng *rand.Rand, inputs, actions []float64) error {
	return a.sample(rng, inputs, actions, false)
}

// Mode implements models.ActionDist with the plugin's deterministic sample.
func (a *ActionDist) Mode(inputs, actions []float64) error {
	return a.sample(nil, inputs, actions, true)
}

func (a *ActionDist) sample(rng *rand.Rand, inputs, actions []float64, det bool) error {
	n, err := a.rows("sample", inputs, actions, nil)
	if err != nil || n == 0 {
		return err
	}
	var seed int64
	if rng != nil {
		seed = int64(rng.Uint64())
	}
	acts, err := a.d.Sample(n, inputs, seed, det)
	if err != nil {
		return err
	}
	copy(actions, acts)
	return nil
}

// LogProb implements models.ActionDist.
func (a *ActionDist) LogProb(inputs, actions, logp []float64) error {
	n, err := a.rows("log-probability", inputs, actions, logp)
	if err != nil || n == 0 {
		return err
	}
	vals, _, err := a.d.LogLikelihood(n, inputs, actions[:n*a.d.aDim])
	if err != nil {
		return err
	}
	copy(logp, vals)
	return nil
}

// LogLikelihood implements models.ActionDist.
func (a *ActionDist) LogLikelihood(t *models.Tape, inputs, actions *models.Tensor) *models.Tensor {
	acts := actions.Data[:actions.Len()]
	return t.Apply(&rowFunc{eval: func(n int, x []float64) ([]float64, []float64, error) {
		return a.d.LogLikelihood(n, x, acts)
	}}, inputs, nil, 1)
}

// Entropy implements models.ActionDist.
func (a *ActionDist) Entropy(t *models.Tape, inputs *models.Tensor) *models.Tensor {
	return t.Apply(&rowFunc{eval: a.d.Entropy}, inputs, nil, 1)
}

// KL implements models.ActionDist: the plugin's KL(p ‖ q) with gradients
// in both, p passed to Tape.Apply as its input and q as its weights.
func (a *ActionDist) KL(t *models.Tape, inputs, other *models.Tensor) *models.Tensor {
	return t.Apply(&klFunc{d: a.d}, inputs, other, 1)
}

// rowFunc is a per-row value of a distribution's inputs with its gradient,
// computed by the plugin in one call: Forward keeps the gradient for
// Backward.
type rowFunc struct {
	eval  func(n int, x []float64) (vals, grads []float64, err error)
	grads []float64
}

func (f *rowFunc) Forward(x, _, out *models.Tensor) error {
	if x.Rows == 0 {
		return nil
	}
	vals, grads, err := f.eval(x.Rows, x.Data[:x.Len()])
	if err != nil {
		return err
	}
	copy(out.Data, vals)
	f.grads = grads
	return nil
}

func (f *rowFunc) Backward(x, _, _ *models.Tensor, outGrad, xGrad, _ []float64) error {
	addRowGrads(xGrad, outGrad, f.grads, x.Cols)
	return nil
}

// klFunc is the plugin's KL divergence between two rows of inputs.
type klFunc struct {
	d      *Distribution
	gp, gq []float64
}

func (f *klFunc) Forward(p, q, out *models.Tensor) error {
	if p.Rows != q.Rows || p.Cols != q.Cols {
		return fmt.Errorf("plugin distribution %s: KL of %v and %v: the shapes differ", f.d.proc.path, p, q)
	}
	if p.Rows == 0 {
		return nil
	}
	vals, gp, gq, err := f.d.KL(p.Rows, p.Data[:p.Len()], q.Data[:q.Len()])
	if err != nil {
		return err
	}
	copy(out.Data, vals)
	f.gp, f.gq = gp, gq
	return nil
}

func (f *klFunc) Backward(p, _, _ *models.Tensor, outGrad, pGrad, qGrad []float64) error {
	addRowGrads(pGrad, outGrad, f.gp, p.Cols)
	addRowGrads(qGrad, outGrad, f.gq, p.Cols)
	return nil
}

// addRowGrads adds outGrad[r]·grads[r, j] to dst[r, j] (dst nil: not
// needed; grads nil: the forward pass failed, nothing to add).
func addRowGrads(dst, outGrad, grads []float64, cols int) {
	if dst == nil || grads == nil {
		return
	}
	for r, g := range outGrad {
		row := grads[r*cols : (r+1)*cols]
		for j, v := range row {
			dst[r*cols+j] += g * v
		}
	}
}
