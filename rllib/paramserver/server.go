// Package paramserver holds parameter servers (section 1.14 of the Ray
// documentation) built on gray actors: a Server actor keeps named weight
// vectors and answers Pull and Push; Push applies one worker's update as it
// arrives (the asynchronous server) and ApplyGradients averages one
// gradient from each worker and takes one optimizer step (the synchronous
// server). A Client shards the keys over several Server actors, splits every
// push and pull by shard and gathers the answers, and ships large vectors
// through the object store: put once, passed by reference.
//
// Importing the package registers the "paramserver.Server" actor type, so
// every program that uses it must call gray.ServeIfWorker first in main.
package paramserver

import (
	"context"
	"errors"
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
	// OptAdd adds each pushed vector to the weights (the seeds' asynchronous
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

// ApplyGradients averages one update from each worker, applies the mean as
// one step (the synchronous server) and returns the new version. The
// updates arrive by reference: each worker put its gradient into the object
// store once and the server reads it there. Only this server's keys are
// used from each update, so one set of references serves every shard.
func (s *Server) ApplyGradients(ctx context.Context, refs []gray.Ref[Named]) (int64, error) {
	if len(refs) == 0 {
		return s.version, errors.New("paramserver: ApplyGradients needs at least one gradient")
	}
	grads, err := gray.GetAll(ctx, refs)
	if err != nil {
		return s.version, fmt.Errorf("paramserver: fetching gradients: %w", err)
	}
	mean := make(Named, len(s.weights))
	for k, w := range s.weights {
		m := make([]float64, len(w))
		for i, g := range grads {
			v, ok := g[k]
			if !ok {
				return s.version, fmt.Errorf("paramserver: gradient %d of %d lacks key %q", i+1, len(grads), k)
			}
			if len(v) != len(w) {
				return s.version, fmt.Errorf("paramserver: gradient %d of %d: key %q has %d values, the weights have %d", i+1, len(grads), k, len(v), len(w))
			}
			for j, x := range v {
				m[j] += x
			}
		}
		inv := 1 / float64(len(grads))
		for j := range m {
			m[j] *= inv
		}
		mean[k] = m
	}
	if err := s.check(mean); err != nil {
		return s.version, err
	}
	if err := s.apply(mean); err != nil {
		return s.version, err
	}
	return s.version, nil
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
	applyMethod = gray.Method1(serverActor, "ApplyGradients", (*Server).ApplyGradients)
	keysMethod  = gray.Method0(serverActor, "Keys", (*Server).Keys)
)
