// Package paramserver holds parameter servers (section 1.14 of the Ray
// documentation) built on gray actors: a Server actor keeps named weight
// vectors and answers Pull and Push; Push applies one worker's update as it
// arrives (the asynchronous server), and Accumulate then Step average one
// gradient from each worker and take one optimizer step (the synchronous
// server). A Client shards the keys over several Server actors, splits every
// push and pull by shard and gathers the answers, and ships large vectors
// through the object store: put once, passed by reference.
//
// # Shipping weights without copies
//
// The synchronous path never copies a vector on its way: a worker's
// gradient is written into the object store once (its task's result) and
// every shard reads it in place (Accumulate takes a gray.Shared); a
// shard's new weights are written into the store once (Step's result) and
// every worker reads them in place through a View. Client.Step submits a
// round and returns the references to the new weights without waiting, so
// a driver can hand them straight to the next round's workers.
//
// Importing the package registers the "paramserver.Server" actor type, so
// every program that uses it must call gray.ServeIfWorker first in main.
package paramserver

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
)

// Named is a set of named vectors: weights, gradients or deltas.
type Named map[string][]float64

// Size is the total number of values.
func (n Named) Size() int {
	s := 0
	for _, v := range n {
		s += len(v)
	}
	return s
}

// Keys lists the names, sorted.
func (n Named) Keys() []string {
	ks := make([]string, 0, len(n))
	for k := range n {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Clone returns a deep copy.
func (n Named) Clone() Named {
	out := make(Named, len(n))
	for k, v := range n {
		out[k] = slices.Clone(v)
	}
	return out
}

// Optimizer names accepted by ServerConfig.Optimizer.
const (
	// OptAdd adds each pushed vector to the weights (Ray 0.2's asynchronous
	// server: workers push ready-made deltas).
	OptAdd = "add"
	// OptSGD treats pushes as gradients: w -= lr·g (with momentum when set).
	OptSGD = "sgd"
	// OptAdam treats pushes as gradients and takes an Adam step.
	OptAdam = "adam"
)

// ServerConfig configures how a server turns updates into weights.
type ServerConfig struct {
	// Optimizer is OptAdd (default), OptSGD or OptAdam.
	Optimizer string
	// LR is the learning rate of OptSGD and OptAdam.
	LR float64
	// Momentum is OptSGD's heavy-ball momentum (0: none).
	Momentum float64
}

// Validate names the first bad setting.
func (c ServerConfig) Validate() error {
	switch c.Optimizer {
	case "", OptAdd:
	case OptSGD, OptAdam:
		if !(c.LR > 0) || math.IsInf(c.LR, 0) {
			return fmt.Errorf("paramserver: optimizer %q needs a positive finite learning rate, got %v", c.Optimizer, c.LR)
		}
	default:
		return fmt.Errorf("paramserver: unknown optimizer %q; use %q, %q or %q", c.Optimizer, OptAdd, OptSGD, OptAdam)
	}
	if c.Momentum < 0 || c.Momentum >= 1 {
		return fmt.Errorf("paramserver: momentum must be in [0, 1), got %v", c.Momentum)
	}
	return nil
}

// Server holds named weights and applies updates to them. It is the state
// of the "paramserver.Server" actor; methods run one at a time, in the
// order they were submitted, so updates apply in arrival order.
type Server struct {
	cfg     ServerConfig
	weights Named
	// opts holds one optimizer per key: Adam's moments and SGD's velocity
	// are per vector.
	opts    map[string]models.Optimizer
	version int64
	// sum and count are the gradients Accumulate added since the last
	// Step; sum is reused from step to step (the first gradient of a
	// step overwrites it).
	sum   Named
	count int
	// accErr is why a gradient of this step was rejected, for Step to say.
	accErr error
}

// NewServer builds a server holding a copy of init.
func NewServer(ctx context.Context, cfg ServerConfig, init Named) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, weights: init.Clone(), opts: map[string]models.Optimizer{}}
	for k, v := range s.weights {
		if err := checkFinite(k, v); err != nil {
			return nil, fmt.Errorf("paramserver: initial weights: %w", err)
		}
		switch cfg.Optimizer {
		case OptSGD:
			s.opts[k] = models.NewSGD(cfg.LR, cfg.Momentum)
		case OptAdam:
			s.opts[k] = models.NewAdam(cfg.LR)
		}
	}
	return s, nil
}

// Pull returns the weights of keys (all of them when keys is empty) and
// the server's version: the number of updates applied so far.
func (s *Server) Pull(ctx context.Context, keys []string) (Pulled, error) {
	if len(keys) == 0 {
		keys = s.weights.Keys()
	}
	out := make(Named, len(keys))
	for _, k := range keys {
		w, ok := s.weights[k]
		if !ok {
			return Pulled{}, s.unknownKey(k)
		}
		out[k] = w
	}
	return Pulled{Weights: out, Version: s.version}, nil
}

// Pulled is a server's answer to Pull.
type Pulled struct {
	Weights Named
	// Version is the number of updates applied before this pull.
	Version int64
}

// Push applies one update now (the asynchronous server) and returns the new
// version. Every key must be known and every vector of the right length;
// otherwise nothing is applied.
func (s *Server) Push(ctx context.Context, update Named) (int64, error) {
	if err := s.check(update); err != nil {
		return s.version, err
	}
	if err := s.apply(update); err != nil {
		return s.version, err
	}
	return s.version, nil
}

// Accumulate adds this server's keys of one worker's gradient to the sum
// the next Step averages (the synchronous server), and returns how many
// gradients the sum holds. The gradient is read in place in the object
// store (a gray.Shared argument: no copy) and released before Accumulate
// returns. Calls run in submission order, so a step's sum is the same on
// every run. A gradient that lacks a key or has a vector of the wrong
// length changes nothing and fails the call.
func (s *Server) Accumulate(ctx context.Context, grad gray.Shared[Named]) (int, error) {
	defer func() { _ = grad.Release() }()
	g := grad.Value()
	for k, w := range s.weights {
		v, ok := g[k]
		if !ok {
			s.accErr = fmt.Errorf("paramserver: a gradient of step %d lacks key %q", s.version+1, k)
			return s.count, s.accErr
		}
		if len(v) != len(w) {
			s.accErr = fmt.Errorf("paramserver: a gradient of step %d: key %q has %d values, the weights have %d", s.version+1, k, len(v), len(w))
			return s.count, s.accErr
		}
	}
	if s.sum == nil {
		s.sum = make(Named, len(s.weights))
		for k, w := range s.weights {
			s.sum[k] = make([]float64, len(w))
		}
	}
	for k, m := range s.sum {
		v := g[k][:len(m)]
		if s.count == 0 {
			copy(m, v)
			continue
		}
		for j, x := range v {
			m[j] += x
		}
	}
	s.count++
	return s.count, nil
}

// Step averages the want gradients accumulated since the last step and
// applies the mean as one optimizer step (the synchronous server). With
// pull it also returns the new weights, which the runtime writes into the
// object store once: pass their reference on to the workers, who read
// them in place. A sum of any other number of gradients (one of them was
// rejected, or the caller miscounted) is dropped and the step fails,
// changing nothing.
func (s *Server) Step(ctx context.Context, want int, pull bool) (Pulled, error) {
	sum, n, accErr := s.sum, s.count, s.accErr
	s.count, s.accErr = 0, nil
	if n != want || want < 1 {
		err := fmt.Errorf("paramserver: step %d expected %d gradients but %d arrived intact; nothing was applied", s.version+1, want, n)
		if accErr != nil {
			err = fmt.Errorf("%w: %w", err, accErr)
		}
		return Pulled{Version: s.version}, err
	}
	inv := 1 / float64(n)
	for _, m := range sum {
		for j := range m {
			m[j] *= inv
		}
	}
	if err := s.check(sum); err != nil {
		return Pulled{Version: s.version}, err
	}
	if err := s.apply(sum); err != nil {
		return Pulled{Version: s.version}, err
	}
	out := Pulled{Version: s.version}
	if pull {
		out.Weights = s.weights
	}
	return out, nil
}

// Keys lists the keys this server holds, sorted.
func (s *Server) Keys(ctx context.Context) ([]string, error) { return s.weights.Keys(), nil }

// check validates an update against the weights before anything changes.
func (s *Server) check(update Named) error {
	for k, v := range update {
		w, ok := s.weights[k]
		if !ok {
			return s.unknownKey(k)
		}
		if len(v) != len(w) {
			return fmt.Errorf("paramserver: update for key %q has %d values, the weights have %d", k, len(v), len(w))
		}
		if err := checkFinite(k, v); err != nil {
			return fmt.Errorf("paramserver: update rejected: %w", err)
		}
	}
	return nil
}

// apply changes the weights; keys are visited in sorted order so that a
// run is reproducible.
func (s *Server) apply(update Named) error {
	for _, k := range update.Keys() {
		w, g := s.weights[k], update[k]
		if opt := s.opts[k]; opt != nil {
			if err := opt.Step(w, g); err != nil {
				return fmt.Errorf("paramserver: key %q: %w", k, err)
			}
			continue
		}
		for i, x := range g {
			w[i] += x
		}
	}
	s.version++
	return nil
}

func (s *Server) unknownKey(k string) error {
	return fmt.Errorf("paramserver: unknown key %q; this server holds %v", k, s.weights.Keys())
}

func checkFinite(k string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("key %q value %d is %v", k, i, x)
		}
	}
	return nil
}

// The actor type and its methods, registered at package level so that
// drivers and workers (the same executable) agree on the names.
var (
	serverActor = gray.Actor2("paramserver.Server", NewServer)
	pullMethod  = gray.Method1(serverActor, "Pull", (*Server).Pull)
	pushMethod  = gray.Method1(serverActor, "Push", (*Server).Push)
	accMethod   = gray.Method1(serverActor, "Accumulate", (*Server).Accumulate)
	stepMethod  = gray.Method2(serverActor, "Step", (*Server).Step)
	keysMethod  = gray.Method0(serverActor, "Keys", (*Server).Keys)
)
