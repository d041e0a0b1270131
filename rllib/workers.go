package rllib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
)

// workerOptions are the options of every algorithm's worker actor. A
// worker holds one CPU while it lives (CheckWorkers counts on it), so the
// scheduler spreads the workers over the CPUs it has, a cluster's nodes
// included, rather than packing them all beside the driver. It checkpoints
// after every call, an empty checkpoint (Stateless), which keeps a
// cluster's replay log of each worker short.
func workerOptions() []gray.Option {
	return []gray.Option{gray.CPUs(1), gray.CheckpointInterval(1)}
}

// Checkpointed is a worker actor's type: a pointer to its struct, which
// embeds Stateless (or checkpoints its own state).
type Checkpointed[T any] interface {
	*T
	gray.Checkpointer
}

// WorkerActor registers an algorithm's worker actor of one constructor
// argument (its WorkerSpec), placed and checkpointed as every algorithm's
// workers are. An algorithm registers its workers at package level, so that
// driver and worker processes (the same executable) agree on the names.
func WorkerActor[T any, PT Checkpointed[T], A any](name string, ctor func(context.Context, A) (*T, error)) *gray.ActorType[T] {
	return gray.Actor1(name, ctor, workerOptions()...)
}

// RolloutActor is a rollout worker actor type with its Sample method,
// the one call an algorithm's driver makes of its rollout workers: it
// passes the weights (W) and what to sample (R) and gets the samples (S).
type RolloutActor[T, W, R, S any] struct {
	*gray.ActorType[T]
	Sample *gray.ActorMethod2[T, W, R, S]
}

// NewRolloutActor registers a rollout worker actor built from its
// WorkerSpec (WorkerActor) and its method sample under the name "Sample".
func NewRolloutActor[T any, PT Checkpointed[T], C, W, R, S any](name string, ctor func(context.Context, WorkerSpec[C]) (*T, error), sample func(*T, context.Context, W, R) (S, error)) RolloutActor[T, W, R, S] {
	t := WorkerActor[T, PT](name, ctor)
	return RolloutActor[T, W, R, S]{ActorType: t, Sample: gray.Method2(t, "Sample", sample)}
}

// WorkerActor2 is WorkerActor for a constructor of two arguments.
func WorkerActor2[T any, PT Checkpointed[T], A1, A2 any](name string, ctor func(context.Context, A1, A2) (*T, error)) *gray.ActorType[T] {
	return gray.Actor2(name, ctor, workerOptions()...)
}

// Stateless, embedded in a worker actor's struct, makes it a
// gray.Checkpointer whose checkpoint is empty. It is for a worker whose
// answers depend only on what each call brings (the weights, the filter,
// the numbers its random draws are seeded from) and on its environments:
// one recreated after its node died starts fresh episodes without
// replaying earlier calls, and the runtime keeps no earlier weights for
// it.
type Stateless struct{}

// Checkpoint implements gray.Checkpointer: it is empty.
func (Stateless) Checkpoint(context.Context) ([]byte, error) { return nil, nil }

// Restore implements gray.Checkpointer: the worker its constructor made is
// the one to go on with.
func (Stateless) Restore(context.Context, []byte) error { return nil }

// CheckWorkers checks, before an agent starts them, that numWorkers worker
// actors of one CPU each can run: the gray runtime must be initialized,
// and it must have at least numWorkers CPUs in all (gray.ClusterResources),
// since the surplus would wait for a CPU forever. The error says what to
// change instead of hanging. Inside a worker process, where the runtime's
// size is not known, it checks nothing. zeroMeans, when not empty, says what
// num_workers 0 does (for example "to sample in this process") and is
// offered as another way out. Errors start with "<alg>: ".
func CheckWorkers(alg string, numWorkers int, zeroMeans string) error {
	orZero := ""
	if zeroMeans != "" {
		orZero = ", or set num_workers to 0 " + zeroMeans
	}
	if !gray.IsInitialized() {
		return fmt.Errorf("%s: num_workers %d needs the gray runtime: call gray.Init first (the train command does)%s", alg, numWorkers, orZero)
	}
	res := gray.ClusterResources()
	if res == nil {
		// Inside a worker process (a tune trial run as an actor) the
		// runtime's size is not known; the agent's start-up wait checks.
		return nil
	}
	cpus := res["CPU"]
	if float64(numWorkers) <= cpus {
		return nil
	}
	return fmt.Errorf("%s: num_workers=%d needs %d CPUs (each worker actor reserves one); the runtime has %g: set num_workers to at most %d or give the runtime more CPUs (--num-cpus)%s",
		alg, numWorkers, numWorkers, cpus, int(math.Floor(cpus)), orZero)
}

// StartWorkers checks that n worker actors can run (CheckWorkers), then
// starts them with start(ctx, i) for i = 1..n. When one fails to start it
// kills those already started and returns an error naming it
// ("<alg>: starting <what> <i>: ..."). zeroMeans is CheckWorkers'.
func StartWorkers[T any](ctx context.Context, alg, what string, n int, zeroMeans string, start func(ctx context.Context, i int) (gray.Handle[T], error)) ([]gray.Handle[T], error) {
	if err := CheckWorkers(alg, n, zeroMeans); err != nil {
		return nil, err
	}
	hs := make([]gray.Handle[T], 0, n)
	for i := 1; i <= n; i++ {
		h, err := start(ctx, i)
		if err != nil {
			_ = KillWorkers(hs)
			return nil, fmt.Errorf("%s: starting %s %d: %w", alg, what, i, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// BuildWorker is where every worker's constructor starts: it checks
// spec's config (a worker process gets it from the driver, which checked
// it, but the constructor is exported), makes the worker's numEnvs
// environments (envs.MakeVector) and builds the worker on them with build.
// When build fails it closes the environments. Errors start with
// "<who> <index>: ", as in "PPO worker 2: ".
func BuildWorker[C any, PC interface {
	*C
	Config
}, W any](who string, spec WorkerSpec[C], numEnvs int, build func(vec envs.Vector) (W, error)) (W, error) {
	var none W
	if err := PC(&spec.Config).Validate(); err != nil {
		return none, err
	}
	vec, err := envs.MakeVector(spec.Env, envs.Config(spec.EnvConfig), numEnvs)
	if err != nil {
		return none, fmt.Errorf("%s %d: %w", who, spec.Index, err)
	}
	w, err := build(vec)
	if err != nil {
		_ = vec.Close()
		return none, fmt.Errorf("%s %d: %w", who, spec.Index, err)
	}
	return w, nil
}

// StartWorkerActors is StartWorkers for the usual worker: actor i, for i
// = 1..n, is built from b's WorkerSpec(i).
func StartWorkerActors[C, T any](ctx context.Context, b *Base[C], actor *gray.ActorType[T], what string, n int, zeroMeans string) ([]gray.Handle[T], error) {
	return StartWorkers(ctx, b.Name, what, n, zeroMeans, func(ctx context.Context, i int) (gray.Handle[T], error) {
		return actor.Remote(ctx, b.WorkerSpec(i))
	})
}

// StartWait bounds AwaitStarted's wait: First for the first worker to
// start, Stall for the next one once some have.
type StartWait struct{ First, Stall time.Duration }

// AwaitStarted waits until every worker actor has answered its call of
// calls, a cheap method each answers once its constructor has run. Each
// worker reserves one CPU; CheckWorkers has made sure the runtime has
// enough in all, but other work may hold some, so the surplus waits for a
// CPU: when none starts within wait.First, or some have and the next has
// not within wait.Stall, it says so and what to change instead of hanging.
// Errors start with "<alg>: "; what names a worker ("runner", 1-based in
// errors) and zeroMeans is CheckWorkers'.
func AwaitStarted[R any](ctx context.Context, alg, what string, calls []gray.Ref[R], wait StartWait, zeroMeans string) error {
	index := make(map[gray.ObjectID]int, len(calls))
	for i, r := range calls {
		index[r.ID()] = i
	}
	start := time.Now()
	progress, started, rest := start, 0, calls
	for len(rest) > 0 {
		left := wait.First - time.Since(start)
		if started > 0 {
			left = wait.Stall - time.Since(progress)
		}
		if left <= 0 {
			break
		}
		ready, pending, err := gray.Wait(ctx, rest, 1, left)
		if err != nil {
			return fmt.Errorf("%s: waiting for the %ss to start: %w", alg, what, err)
		}
		for _, r := range ready {
			if _, err := gray.Get(ctx, r); err != nil {
				return fmt.Errorf("%s: starting %s %d: %w", alg, what, index[r.ID()]+1, err)
			}
			started++
			progress = time.Now()
		}
		rest = pending
	}
	if len(rest) == 0 {
		return nil
	}
	orZero := ""
	if zeroMeans != "" {
		orZero = ", or set num_workers to 0 " + zeroMeans
	}
	if started == 0 {
		return fmt.Errorf("%s: no %s started within %v: the runtime has no free CPU for them (each reserves one); free CPUs or give the runtime more (train --num-cpus, gray.Options.NumCPUs)%s",
			alg, what, wait.First, orZero)
	}
	return fmt.Errorf("%s: only %d of num_workers=%d %ss started (the rest waited %v for a CPU): each %s reserves one CPU and the runtime has no free CPU for the rest; set num_workers to at most %d, or give the runtime more CPUs (train --num-cpus, gray.Options.NumCPUs)%s",
		alg, started, len(calls), what, wait.Stall, what, started, orZero)
}

// KillWorkers kills every actor of hs, joining the errors.
func KillWorkers[T any](hs []gray.Handle[T]) error {
	var errs []error
	for _, h := range hs {
		errs = append(errs, gray.Kill(h))
	}
	return errors.Join(errs...)
}
