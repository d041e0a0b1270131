package dqn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/replay"
)

// learner takes gradient steps on the online network from replayed
// transitions. Each batch is split into num_learner_threads fixed parts
// (shards) run by a models.Team, each on its own copies of the online and
// target networks, which share the master networks' weights and keep
// gradients of their own; the gradients are summed in a fixed order, and
// the sum, the norm, the clipping and the Adam step are split over the
// team as PPO's learner does: a seed and a thread count give the same
// weights on any machine. Every buffer it uses is reused across steps: a
// shard's step does one batched forward and backward pass on its online
// copy and two batched forward passes without gradients (online and target
// on the next observations).
type learner struct {
	cfg       *Config
	q, target *qNetwork
	opt       *models.Adam
	team      *models.Team
	// shards are the per-thread network copies; shards[0] uses q and
	// target themselves. grads holds their gradient vectors in shard
	// order, for the team's gradient sum.
	shards []*dqnShard
	grads  [][]float64
	// tr shares the online weights' transposes between the shards'
	// backward passes (nil with one shard).
	tr      *models.Transposes
	batch   replay.Batch
	y       []float64
	tdAbs   []float64
	qsa     []float64
	nextAct []float64
}

// dqnShard is one thread's networks and its part of a step.
type dqnShard struct {
	q, target *qNetwork
	tape      *models.Tape
	loss      float64
	// copied is set when the shard's networks keep weights of their own (a
	// custom model, which may mirror them elsewhere): they are copied from
	// the master networks before each step.
	copied bool
}

// newLearner builds the learner with threads shards; newNet makes a
// network of the same shape for each shard after the first.
func newLearner(cfg *Config, q, target *qNetwork, threads int, newNet func() (*qNetwork, error)) (*learner, error) {
	n := cfg.TrainBatchSize
	l := &learner{
		cfg: cfg, q: q, target: target, opt: models.NewAdam(cfg.LR), team: models.NewTeam(threads),
		y: make([]float64, n), tdAbs: make([]float64, n), qsa: make([]float64, n), nextAct: make([]float64, n),
	}
	l.shards = append(l.shards, &dqnShard{q: q, target: target, tape: models.NewTape()})
	for len(l.shards) < threads {
		sh := &dqnShard{tape: models.NewTape(), copied: cfg.Model.CustomModel != ""}
		var err error
		if sh.q, err = newNet(); err == nil {
			sh.target, err = newNet()
		}
		if err == nil && !sh.copied {
			err = sh.q.params.ShareWeights(q.params)
			if err == nil {
				err = sh.target.params.ShareWeights(target.params)
			}
		}
		if err != nil {
			l.close()
			return nil, err
		}
		l.shards = append(l.shards, sh)
	}
	for _, sh := range l.shards {
		l.grads = append(l.grads, sh.q.params.Grads())
	}
	if len(l.shards) > 1 {
		l.tr = models.NewTransposes(q.params)
		for _, sh := range l.shards {
			sh.tape.ShareTransposes(l.tr)
		}
	}
	return l, nil
}

// close stops the learner's team.
func (l *learner) close() { l.team.Close() }

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
	// Shard k takes rows [k·n/shards, (k+1)·n/shards) and weighs its mean
	// loss by its share of the rows, so the summed gradient is the whole
	// batch's.
	shards := l.shards[:min(len(l.shards), n)]
	l.tr.Reset() // the last step changed the weights
	p := l.q.params
	var s stepStats
	var stepErr error
	var upd *models.AdamRanges
	// One meeting of the team: the shards (each writing its gradient), the
	// gradient sum with its norm, then the checks, clipping, the Adam step
	// and the check of the new weights.
	s.gradNorm = l.team.SumStep(l.grads[:len(shards)], len(shards), func(k int) {
		lo, hi := models.ShardBounds(k, len(shards), n)
		l.shardStep(shards[k], lo, hi, float64(hi-lo)/float64(n))
	}, func(norm float64) func(lo, hi int) {
		for _, sh := range shards {
			s.loss += sh.loss
		}
		switch {
		case math.IsNaN(s.loss) || math.IsInf(s.loss, 0):
			stepErr = &nanError{what: "the loss"}
		case math.IsNaN(norm) || math.IsInf(norm, 0):
			stepErr = &nanError{what: "the gradient"}
		}
		if stepErr != nil {
			return nil
		}
		upd, stepErr = l.opt.Ranges(p.Flat(), p.Grads(), models.ClipScale(norm, cfg.GradClip))
		if stepErr != nil {
			return nil
		}
		return upd.Apply
	})
	for i := range n {
		s.meanQ += l.qsa[i]
		s.meanTD += l.tdAbs[i]
	}
	s.meanQ /= float64(n)
	s.meanTD /= float64(n)
	if stepErr != nil {
		return s, stepErr
	}
	if !upd.Finite() {
		return s, &nanError{what: "a weight"}
	}
	if buf.Prioritized() {
		if err := buf.UpdatePriorities(b.Indices, l.tdAbs[:n]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// shardStep computes the loss of batch rows [lo, hi) scaled by weight on
// the shard's networks, leaving its gradient in the shard's online
// parameters and each row's Q(s, a) and |TD error| in l.qsa and l.tdAbs.
func (l *learner) shardStep(sh *dqnShard, lo, hi int, weight float64) {
	cfg, b := l.cfg, &l.batch
	if sh.copied {
		// The master networks may have been set from outside (a target
		// sync, a restored checkpoint): start from them every step.
		copy(sh.q.params.Flat(), l.q.params.Flat())
		copy(sh.target.params.Flat(), l.target.params.Flat())
	}
	n, od, na := hi-lo, sh.q.obsDim, sh.q.nActions
	next := b.NextObs[lo*od : hi*od]

	// Targets, without gradients.
	if cfg.DoubleQ {
		online := sh.q.values(next, n)
		for i := range n {
			l.nextAct[lo+i] = float64(argmax(online[i*na : (i+1)*na]))
		}
	}
	tq := sh.target.values(next, n)
	for i := range n {
		row := tq[i*na : (i+1)*na]
		v := row[argmax(row)]
		if cfg.DoubleQ {
			v = row[int(l.nextAct[lo+i])]
		}
		l.y[lo+i] = b.Rewards[lo+i] + b.Discounts[lo+i]*v
	}

	// The loss and its gradient.
	t := sh.tape
	t.Reset()
	qAll := sh.q.forward(t, b.Obs[lo*od:hi*od], n)
	qsa := t.Gather(qAll, t.Const(n, 1, b.Actions[lo:hi]))
	td := t.Sub(qsa, t.Const(n, 1, l.y[lo:hi]))
	loss := t.Scale(t.Mean(t.Mul(t.Huber(td, cfg.HuberDelta), t.Const(n, 1, b.Weights[lo:hi]))), weight)
	sh.loss = loss.Item()
	for i := range n {
		l.qsa[lo+i] = qsa.Data[i]
		l.tdAbs[lo+i] = math.Abs(td.Data[i])
	}
	// The pass writes the shard's gradient: no clear before it, and the
	// sum only reads it.
	t.BackwardSet(loss, sh.q.params)
}
