package dqn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/replay"
)

// learner takes gradient steps on the online network from replayed
// transitions. Every buffer it uses is reused across steps: a step does
// one batched forward and backward pass on the online network and two
// batched forward passes without gradients (online and target on the next
// observations) and allocates nothing.
type learner struct {
	cfg       *Config
	q, target *qNetwork
	opt       *models.Adam
	tape      *models.Tape
	batch     replay.Batch
	y, tdAbs  []float64
	nextAct   []float64
}

func newLearner(cfg *Config, q, target *qNetwork) *learner {
	n := cfg.TrainBatchSize
	return &learner{
		cfg: cfg, q: q, target: target, opt: models.NewAdam(cfg.LR), tape: models.NewTape(),
		y: make([]float64, n), tdAbs: make([]float64, n), nextAct: make([]float64, n),
	}
}

// syncTarget copies the online weights into the target network.
func (l *learner) syncTarget() { copy(l.target.params.Flat(), l.q.params.Flat()) }

// stepStats describe one gradient step.
type stepStats struct {
	loss, meanQ, meanTD, gradNorm float64
}

// nanError reports a non-finite loss, gradient or weight.
type nanError struct {
	what string
	step int64
}

func (e *nanError) Error() string {
	return fmt.Sprintf("%s is NaN or Inf at gradient step %d", e.what, e.step)
}

// step samples train_batch_size transitions and takes one Adam step on
//
//	loss = mean_i w_i · huber(Q(s_i, a_i) - y_i)
//	y_i  = R_i + d_i · Q_target(s'_i, a*_i)
//
// where R_i is the n-step return, d_i its discount (0 after a terminal
// state), a*_i = argmax_a Q(s'_i, a) with double Q-learning and
// argmax_a Q_target(s'_i, a) without, and w_i the importance weight
// (1 without prioritised replay). With prioritised replay the sampled
// transitions get |TD error| as their new priority.
func (l *learner) step(buf *replay.Buffer, rng *rand.Rand, beta float64) (stepStats, error) {
	cfg, b := l.cfg, &l.batch
	n := cfg.TrainBatchSize
	if err := buf.Sample(rng, n, beta, b); err != nil {
		return stepStats{}, err
	}
	na := l.q.nActions

	// Targets, without gradients.
	if cfg.DoubleQ {
		online := l.q.values(b.NextObs, n)
		for i := range n {
			l.nextAct[i] = float64(argmax(online[i*na : (i+1)*na]))
		}
	}
	tq := l.target.values(b.NextObs, n)
	for i := range n {
		row := tq[i*na : (i+1)*na]
		next := row[argmax(row)]
		if cfg.DoubleQ {
			next = row[int(l.nextAct[i])]
		}
		l.y[i] = b.Rewards[i] + b.Discounts[i]*next
	}

	// The loss and its gradient.
	t := l.tape
	t.Reset()
	qAll := l.q.forward(t, b.Obs, n)
	qsa := t.Gather(qAll, t.Const(n, 1, b.Actions))
	td := t.Sub(qsa, t.Const(n, 1, l.y))
	loss := t.Mean(t.Mul(t.Huber(td, cfg.HuberDelta), t.Const(n, 1, b.Weights)))
	var s stepStats
	s.loss = loss.Item()
	if math.IsNaN(s.loss) || math.IsInf(s.loss, 0) {
		return s, &nanError{what: "the loss"}
	}
	for i := range n {
		s.meanQ += qsa.Data[i]
		l.tdAbs[i] = math.Abs(td.Data[i])
		s.meanTD += l.tdAbs[i]
	}
	s.meanQ /= float64(n)
	s.meanTD /= float64(n)
	p := l.q.params
	p.ZeroGrad()
	t.Backward(loss)
	s.gradNorm = models.ClipByGlobalNorm(p.Grads(), cfg.GradClip)
	if math.IsNaN(s.gradNorm) || math.IsInf(s.gradNorm, 0) {
		return s, &nanError{what: "the gradient"}
	}
	if err := l.opt.Step(p.Flat(), p.Grads()); err != nil {
		return s, err
	}
	if err := p.CheckFinite(false); err != nil {
		return s, &nanError{what: "a weight"}
	}
	if buf.Prioritized() {
		if err := buf.UpdatePriorities(b.Indices, l.tdAbs[:n]); err != nil {
			return s, err
		}
	}
	return s, nil
}
