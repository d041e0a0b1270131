package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Trainable is what a trial trains. The runner calls Setup once, then Step
// repeatedly (one result each), Save/Restore for checkpoints, and Stop once.
type Trainable interface {
	// Setup prepares training with the trial's resolved config; dir is the
	// trial's run folder.
	Setup(ctx context.Context, config map[string]any, dir string) error
	// Step trains one iteration and returns its result. ErrTrainableDone
	// ends the trial normally without a new result.
	Step(ctx context.Context) (map[string]any, error)
	// Save writes a checkpoint into dir (an empty folder the runner made).
	Save(ctx context.Context, dir string) error
	// Restore loads a checkpoint written by Save into dir.
	Restore(ctx context.Context, dir string) error
	// Stop releases everything the trainable holds.
	Stop() error
}

// TrainableFactory makes a fresh Trainable for a trial (or a restart).
type TrainableFactory func() Trainable

// stopTimeout bounds how long Stop waits for a trainable to wind down.
const stopTimeout = 10 * time.Second

// ErrTrainableDone is returned by Step when training has finished.
var ErrTrainableDone = errors.New("tune: trainable finished")

// ReportFunc is how a function trainable reports one result. It blocks until
// the runner wants the next result and returns an error (the context's)
// when the trial must end; the function should then return.
type ReportFunc func(result map[string]any) error

// TrainFunc is a trainable written as one function.
type TrainFunc func(ctx context.Context, config map[string]any, report ReportFunc) error

// FuncTrainable adapts a TrainFunc. The function runs in its own goroutine
// in lockstep with the runner: each report hands over one result and waits
// for the next Step. To be checkpointable, the function calls
// tune.SaveState(ctx, state) before report and tune.LoadState(ctx, &state)
// at its start.
func FuncTrainable(fn TrainFunc) TrainableFactory {
	return func() Trainable { return &funcTrainable{fn: fn} }
}

type funcSession struct {
	state    []byte // latest tune.SaveState value
	restored []byte
}

type sessionKey struct{}

// SaveState records the function's state; the next checkpoint the runner
// takes will contain it. state must marshal to JSON.
func SaveState(ctx context.Context, state any) error {
	s, ok := ctx.Value(sessionKey{}).(*funcSession)
	if !ok {
		return errors.New("tune: SaveState called outside a function trainable")
	}
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("tune: checkpoint state: %w", err)
	}
	s.state = b
	return nil
}

// LoadState fills state from the checkpoint the trial was restored from and
// reports whether there was one.
func LoadState(ctx context.Context, state any) (bool, error) {
	s, ok := ctx.Value(sessionKey{}).(*funcSession)
	if !ok || s.restored == nil {
		return false, nil
	}
	if err := json.Unmarshal(s.restored, state); err != nil {
		return false, fmt.Errorf("tune: restoring checkpoint state: %w", err)
	}
	return true, nil
}

type funcTrainable struct {
	fn      TrainFunc
	config  map[string]any
	sess    funcSession
	started bool
	cancel  context.CancelFunc
	results chan map[string]any
	acks    chan struct{}
	done    chan error
	err     error // the function's return, once done
	exited  bool
}

func (f *funcTrainable) Setup(_ context.Context, config map[string]any, _ string) error {
	f.config = config
	return nil
}

func (f *funcTrainable) start() {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), sessionKey{}, &f.sess))
	f.cancel = cancel
	f.results = make(chan map[string]any)
	f.acks = make(chan struct{})
	f.done = make(chan error, 1)
	f.started = true
	report := func(r map[string]any) error {
		select {
		case f.results <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-f.acks:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				f.done <- fmt.Errorf("tune: trainable function panicked: %v", p)
			}
		}()
		f.done <- f.fn(ctx, f.config, report)
	}()
}

func (f *funcTrainable) Step(ctx context.Context) (map[string]any, error) {
	if f.exited {
		return nil, f.finalErr()
	}
	if !f.started {
		f.start()
	} else {
		select {
		case f.acks <- struct{}{}:
		case err := <-f.done:
			f.exited, f.err = true, err
			return nil, f.finalErr()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case r := <-f.results:
		return r, nil
	case err := <-f.done:
		f.exited, f.err = true, err
		return nil, f.finalErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *funcTrainable) finalErr() error {
	if f.err != nil {
		return f.err
	}
	return ErrTrainableDone
}

func (f *funcTrainable) Save(_ context.Context, dir string) error {
	if f.sess.state == nil {
		return nil // nothing to save: a restart begins afresh
	}
	return os.WriteFile(filepath.Join(dir, "state.json"), f.sess.state, 0o644)
}

func (f *funcTrainable) Restore(_ context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tune: restoring function state: %w", err)
	}
	f.sess.restored, f.sess.state = b, b
	return nil
}

// Stop cancels the function and waits (up to 10 s) for it to return.
func (f *funcTrainable) Stop() error {
	if !f.started || f.exited {
		return nil
	}
	f.cancel()
	select {
	case <-f.done:
		f.exited = true
		return nil
	case <-time.After(stopTimeout):
		return errors.New("tune: trainable function did not return within 10s of its context being cancelled; it must return when ctx is done or report fails")
	}
}

// AgentResources sizes a trial of an rllib agent from its config: 1 CPU
// for the trial itself (its driver loop, learner and, with num_workers 0,
// its sampling), or num_learner_threads CPUs when that is set (the
// learner's threads), plus one CPU per worker actor it starts
// (num_workers), and num_gpus GPUs. Experiment files use it unless they set
// resources_per_trial, so that trials with workers do not oversubscribe
// the node. The workers' CPUs are ExtraCPU: a trial placed in a gray actor
// reserves 1 CPU (and the GPUs) for it, its workers their own.
func AgentResources(config map[string]any) Resources {
	res := Resources{CPU: 1}
	if n, ok := Float(config, "num_learner_threads"); ok && n > 1 {
		res.CPU = n
	}
	if n, ok := Float(config, "num_workers"); ok && n > 0 {
		res.CPU += n
		res.ExtraCPU = n
	}
	if g, ok := Float(config, "num_gpus"); ok && g > 0 {
		res.GPU = g
	}
	return res
}
