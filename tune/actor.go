package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray"
)

// TrainableMaker makes a trainable inside a gray worker process from
// JSON-carried arguments.
type TrainableMaker func(args map[string]any) (Trainable, error)

var trainableMakers = struct {
	sync.RWMutex
	m map[string]TrainableMaker
}{m: map[string]TrainableMaker{}}

// RegisterTrainable names a trainable so that trials can run it in gray
// actors (RemoteTrainable). Call it at package level or in init, so that
// the driver and its worker processes (the same executable) agree.
// Registering a name twice panics.
func RegisterTrainable(name string, make TrainableMaker) {
	trainableMakers.Lock()
	defer trainableMakers.Unlock()
	if _, dup := trainableMakers.m[name]; dup {
		panic(fmt.Sprintf("tune: trainable %q registered twice", name))
	}
	trainableMakers.m[name] = make
}

func lookupTrainable(name string) (TrainableMaker, error) {
	trainableMakers.RLock()
	defer trainableMakers.RUnlock()
	if m, ok := trainableMakers.m[name]; ok {
		return m, nil
	}
	names := make([]string, 0, len(trainableMakers.m))
	for n := range trainableMakers.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("tune: no trainable registered as %q (registered: %s); call tune.RegisterTrainable at package level", name, strings.Join(names, ", "))
}

// agentTrainableName is the built-in registration running rllib agents.
const agentTrainableName = "tune.rllib-agent"

func init() {
	RegisterTrainable(agentTrainableName, func(args map[string]any) (Trainable, error) {
		alg, _ := args["alg"].(string)
		env, _ := args["env"].(string)
		envCfg, _ := args["env_config"].(map[string]any)
		seed, _ := toFloat(args["seed"])
		return AgentTrainable(alg, env, envCfg, int64(seed))(), nil
	})
}

// trialActor hosts one trial's trainable in its own worker process. It
// reserves no gray resources: the tune runner does the resource accounting
// per trial (gray fixes an actor type's resources at registration).
type trialActor struct {
	tr Trainable
}

type stepReply struct {
	Result string `cbor:"result"` // JSON, so numbers keep JSON's types
	Done   bool   `cbor:"done"`
}

var (
	trialActorType = gray.Actor2("tune.Trial", func(ctx context.Context, name, argsJSON string) (*trialActor, error) {
		mk, err := lookupTrainable(name)
		if err != nil {
			return nil, err
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return nil, fmt.Errorf("tune: trainable arguments: %w", err)
		}
		tr, err := mk(args)
		if err != nil {
			return nil, err
		}
		return &trialActor{tr: tr}, nil
	}, gray.CPUs(0))
	trialSetup = gray.Method2(trialActorType, "Setup", func(a *trialActor, ctx context.Context, configJSON, dir string) (bool, error) {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
			return false, err
		}
		return true, a.tr.Setup(ctx, cfg, dir)
	})
	trialStep = gray.Method0(trialActorType, "Step", func(a *trialActor, ctx context.Context) (stepReply, error) {
		r, err := a.tr.Step(ctx)
		if errors.Is(err, ErrTrainableDone) {
			return stepReply{Done: true}, nil
		}
		if err != nil {
			return stepReply{}, err
		}
		b, err := json.Marshal(r)
		if err != nil {
			return stepReply{}, fmt.Errorf("tune: result is not JSON: %w", err)
		}
		return stepReply{Result: string(b)}, nil
	})
	trialSave = gray.Method1(trialActorType, "Save", func(a *trialActor, ctx context.Context, dir string) (bool, error) {
		return true, a.tr.Save(ctx, dir)
	})
	trialRestore = gray.Method1(trialActorType, "Restore", func(a *trialActor, ctx context.Context, dir string) (bool, error) {
		return true, a.tr.Restore(ctx, dir)
	})
	trialStop = gray.Method0(trialActorType, "Stop", func(a *trialActor, ctx context.Context) (bool, error) {
		return true, a.tr.Stop()
	})
)

// RemoteTrainable runs the trainable registered as name in a gray actor:
// one worker process per trial, created at Setup and killed at Stop, with
// every call a method call on it. gray must be initialised. args reach the
// TrainableMaker (they travel as JSON).
func RemoteTrainable(name string, args map[string]any) TrainableFactory {
	return func() Trainable { return &remoteTrainable{name: name, args: args} }
}

// RemoteAgentTrainable is AgentTrainable run in a gray actor per trial.
func RemoteAgentTrainable(alg, env string, envConfig map[string]any, seed int64) TrainableFactory {
	return RemoteTrainable(agentTrainableName, map[string]any{"alg": alg, "env": env, "env_config": envConfig, "seed": seed})
}

type remoteTrainable struct {
	name  string
	args  map[string]any
	h     gray.Handle[trialActor]
	alive bool
}

func (r *remoteTrainable) Setup(ctx context.Context, config map[string]any, dir string) error {
	args, err := json.Marshal(r.args)
	if err != nil {
		return fmt.Errorf("tune: trainable arguments: %w", err)
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("tune: trial config: %w", err)
	}
	h, err := trialActorType.Remote(ctx, r.name, string(args))
	if err != nil {
		return err
	}
	r.h, r.alive = h, true
	_, err = gray.Get(ctx, trialSetup.Remote(h, string(cfg), dir))
	return err
}

func (r *remoteTrainable) Step(ctx context.Context) (map[string]any, error) {
	rep, err := gray.Get(ctx, trialStep.Remote(r.h))
	if err != nil {
		return nil, err
	}
	if rep.Done {
		return nil, ErrTrainableDone
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(rep.Result), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (r *remoteTrainable) Save(ctx context.Context, dir string) error {
	_, err := gray.Get(ctx, trialSave.Remote(r.h, dir))
	return err
}

func (r *remoteTrainable) Restore(ctx context.Context, dir string) error {
	_, err := gray.Get(ctx, trialRestore.Remote(r.h, dir))
	return err
}

// Stop asks the trainable to stop, then ends its worker process.
func (r *remoteTrainable) Stop() error {
	if !r.alive {
		return nil
	}
	r.alive = false
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_, err := gray.Get(ctx, trialStop.Remote(r.h))
	if kerr := gray.Kill(r.h); err == nil {
		err = kerr
	}
	return err
}
