package es

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/rllib"
)

// The worker actor (rllib.WorkerActor2: its second argument is the noise
// table's reference).
var (
	workerActor = rllib.WorkerActor2("es.Worker", NewWorker)
	runMethod   = gray.Method2(workerActor, "Run", (*Worker).Run)
	infoMethod  = gray.Method0(workerActor, "Info", (*Worker).Info)
)

// pool is how the agent runs one iteration's tasks, one per worker.
type pool interface {
	// run returns one Rollouts per task, in order, and how many dead
	// workers it replaced on the way.
	run(ctx context.Context, w Weights, tasks []Task) ([]Rollouts, int, error)
	close() error
}

// localPool runs the single task in the driver (num_workers 0).
type localPool struct{ w *Worker }

func (p *localPool) run(ctx context.Context, w Weights, tasks []Task) ([]Rollouts, int, error) {
	r, err := p.w.Run(ctx, w, tasks[0])
	if err != nil {
		return nil, 0, err
	}
	return []Rollouts{r}, 0, nil
}

func (p *localPool) close() error { return p.w.Close() }

// actorPool drives num_workers worker actors. All of them were started
// with a reference to the same noise table, and a replacement for a dead
// worker is started with it again.
type actorPool struct {
	specs       []WorkerSpec
	noise       gray.Ref[[]float32]
	hs          []gray.Handle[Worker]
	maxRestarts int
	// startWait is how long to wait for workers that have not started once
	// the others have (see awaitStarted).
	startWait time.Duration
}

// workerStartLimit bounds the wait for the first worker to start.
const workerStartLimit = 5 * time.Minute

func newActorPool(ctx context.Context, specs []WorkerSpec, noise gray.Ref[[]float32], cfg Config) (*actorPool, error) {
	p := &actorPool{specs: specs, noise: noise, maxRestarts: cfg.MaxWorkerRestarts,
		startWait: time.Duration(cfg.WorkerStartTimeoutS * float64(time.Second))}
	for _, spec := range specs {
		h, err := workerActor.Remote(ctx, spec, noise)
		if err != nil {
			_ = p.close()
			return nil, fmt.Errorf("ES: starting worker %d: %w", spec.Index, err)
		}
		p.hs = append(p.hs, h)
	}
	if err := p.awaitStarted(ctx); err != nil {
		_ = p.close()
		return nil, err
	}
	return p, nil
}

// awaitStarted waits until every worker has built its environment and
// policy (rllib.AwaitStarted): up to workerStartLimit for the first, and
// worker_start_timeout_s for each next one.
func (p *actorPool) awaitStarted(ctx context.Context) error {
	refs := make([]gray.Ref[WorkerInfo], len(p.hs))
	for i, h := range p.hs {
		refs[i] = infoMethod.Remote(h)
	}
	return rllib.AwaitStarted(ctx, "ES", "worker", refs, rllib.StartWait{First: workerStartLimit, Stall: p.startWait}, "to run episodes in the driver")
}

// run puts the weights into the object store once, gives every worker its
// task and collects the answers as they come. A worker whose process died
// is replaced by a new actor with the same spec and noise reference, which
// redoes the same task (its randomness depends only on the seed, the
// iteration and the worker's index); after max_worker_restarts
// replacements in one iteration the iteration fails.
func (p *actorPool) run(ctx context.Context, w Weights, tasks []Task) ([]Rollouts, int, error) {
	ref, err := gray.Put(ctx, w)
	if err != nil {
		return nil, 0, fmt.Errorf("putting the weights: %w", err)
	}
	n := len(p.hs)
	out := make([]Rollouts, n)
	calls := make([]gray.Ref[Rollouts], n)
	owner := make(map[gray.ObjectID]int, n)
	var pending []gray.Ref[Rollouts]
	submit := func(i int) {
		calls[i] = runMethod.Remote(p.hs[i], ref, tasks[i])
		owner[calls[i].ID()] = i
		pending = append(pending, calls[i])
	}
	for i := range n {
		submit(i)
	}
	restarts := 0
	for len(pending) > 0 {
		ready, rest, err := gray.Wait(ctx, pending, 1, 0)
		if err != nil {
			return nil, restarts, fmt.Errorf("waiting for workers: %w", err)
		}
		pending = rest
		for _, r := range ready {
			i := owner[r.ID()]
			res, err := gray.Get(ctx, calls[i])
			if err == nil {
				out[i] = res
				continue
			}
			if !errors.Is(err, gray.ErrActorDead) {
				return nil, restarts, fmt.Errorf("worker %d: %w", p.specs[i].Index, err)
			}
			if restarts >= p.maxRestarts {
				return nil, restarts, fmt.Errorf("worker %d died and this iteration already replaced %d workers (max_worker_restarts): %w", p.specs[i].Index, restarts, err)
			}
			restarts++
			if err := p.replace(ctx, i); err != nil {
				return nil, restarts, err
			}
			submit(i)
		}
	}
	return out, restarts, nil
}

// replace starts a new actor in place of worker i.
func (p *actorPool) replace(ctx context.Context, i int) error {
	_ = gray.Kill(p.hs[i]) // it is dead already; this releases its resources
	h, err := workerActor.Remote(ctx, p.specs[i], p.noise)
	if err != nil {
		return fmt.Errorf("replacing dead worker %d: %w", p.specs[i].Index, err)
	}
	p.hs[i] = h
	return nil
}

// info asks every worker for its WorkerInfo.
func (p *actorPool) info(ctx context.Context) ([]WorkerInfo, error) {
	refs := make([]gray.Ref[WorkerInfo], len(p.hs))
	for i, h := range p.hs {
		refs[i] = infoMethod.Remote(h)
	}
	return gray.GetAll(ctx, refs)
}

func (p *actorPool) close() error {
	err := rllib.KillWorkers(p.hs)
	p.hs = nil
	return err
}
