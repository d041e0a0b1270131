package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/internal/owned"
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

// TrialDirPrefix begins the name of a trial's run folder on its node,
// in the temporary directory: gray-trial-<pid>.<start>-<random>, swept by
// the next trial on the machine once its worker is gone.
const TrialDirPrefix = owned.TrialDirPrefix

// trialActor hosts one trial's trainable in its own worker process,
// possibly on another node than the driver's. The trainable writes into a
// folder of that node (dir); its checkpoints and the files it leaves
// there travel to the driver as archives (ship.go), so the trial's folder
// on the driver stays the one copy that counts.
type trialActor struct {
	tr       Trainable
	dir      string // the trainable's run folder on this node
	restored string // the checkpoint last restored, unpacked on this node
	sync     dirSync
	node     string // the cluster node this process runs on ("" off a cluster)
}

type stepReply struct {
	Result string `cbor:"result"` // JSON, so numbers keep JSON's types
	Done   bool   `cbor:"done"`
}

// saveReply is a checkpoint packed on the actor's node, with the files the
// trainable wrote into its run folder since the last reply.
type saveReply struct {
	Checkpoint []byte `cbor:"checkpoint"`
	Files      []byte `cbor:"files,omitempty"`
}

// resultNodeKey is the result key naming the cluster node a trial in an
// actor ran the iteration on (gray start's node ID), so that a sweep's
// results say where each trial ran.
const resultNodeKey = "node_id"

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
		return &trialActor{tr: tr, node: gray.NodeID()}, nil
	},
		// Resources come per trial (RemoteWith). NoRestarts: the runner
		// restarts a trial whose actor died from the trial's own checkpoint
		// (max_failures), so the runtime must not replay its calls.
		gray.CPUs(0), gray.NoRestarts())
	trialSetup = gray.Method1(trialActorType, "Setup", func(a *trialActor, ctx context.Context, configJSON string) (string, error) {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
			return "", err
		}
		// Folders of trials whose worker was killed are swept here.
		_, _ = owned.Sweep(os.TempDir(), TrialDirPrefix)
		dir, err := owned.MkdirTemp("", TrialDirPrefix)
		if err != nil {
			return "", fmt.Errorf("tune: the trial's run folder on node %q: %w", a.node, err)
		}
		a.dir, a.sync.dir = dir, dir
		return a.node, a.tr.Setup(ctx, cfg, dir)
	})
	trialStep = gray.Method0(trialActorType, "Step", func(a *trialActor, ctx context.Context) (stepReply, error) {
		r, err := a.tr.Step(ctx)
		if errors.Is(err, ErrTrainableDone) {
			return stepReply{Done: true}, nil
		}
		if err != nil {
			return stepReply{}, err
		}
		if r == nil {
			return stepReply{}, errors.New("Step returned a nil result")
		}
		if _, ok := r[resultNodeKey]; !ok && a.node != "" {
			r[resultNodeKey] = a.node
		}
		b, err := json.Marshal(r)
		if err != nil {
			return stepReply{}, fmt.Errorf("tune: result is not JSON: %w", err)
		}
		return stepReply{Result: string(b)}, nil
	})
	trialSave = gray.Method0(trialActorType, "Save", func(a *trialActor, ctx context.Context) (saveReply, error) {
		dir, err := os.MkdirTemp("", "gray-checkpoint-")
		if err != nil {
			return saveReply{}, fmt.Errorf("tune: checkpoint folder on node %q: %w", a.node, err)
		}
		defer os.RemoveAll(dir)
		if err := a.tr.Save(ctx, dir); err != nil {
			return saveReply{}, err
		}
		var rep saveReply
		if rep.Checkpoint, err = packDir(dir, nil); err != nil {
			return saveReply{}, err
		}
		rep.Files, err = a.sync.changes()
		return rep, err
	})
	trialRestore = gray.Method1(trialActorType, "Restore", func(a *trialActor, ctx context.Context, archive []byte) (bool, error) {
		// Kept until the next restore or the actor's end: a trainable may
		// read its checkpoint lazily.
		a.dropRestored()
		dir, err := os.MkdirTemp("", "gray-restore-")
		if err != nil {
			return false, fmt.Errorf("tune: checkpoint folder on node %q: %w", a.node, err)
		}
		a.restored = dir
		if err := unpackDir(archive, dir); err != nil {
			return false, err
		}
		return true, a.tr.Restore(ctx, dir)
	})
	trialStop = gray.Method0(trialActorType, "Stop", func(a *trialActor, ctx context.Context) ([]byte, error) {
		err := a.tr.Stop()
		var files []byte
		if a.dir != "" {
			var serr error
			files, serr = a.sync.changes()
			if err == nil {
				err = serr
			}
			_ = os.RemoveAll(a.dir)
		}
		a.dropRestored()
		return files, err
	})
)

func (a *trialActor) dropRestored() {
	if a.restored != "" {
		_ = os.RemoveAll(a.restored)
		a.restored = ""
	}
}

// RemoteTrainable runs the trainable registered as name in a gray actor:
// one worker process per trial, created at Setup and killed at Stop, with
// every call a method call on it. gray must be initialised. args reach the
// TrainableMaker (they travel as JSON). On a cluster the actor runs on any
// node with room for the trial's resources (the runner reserves them:
// Resources, less ExtraCPU); its checkpoints and the files it writes into
// its run folder are copied into the trial's folder here (at each
// checkpoint and when it stops), and Restore sends the checkpoint to
// wherever the trial runs now. Registered chooses between an actor and
// this process by Experiment.Placement instead.
func RemoteTrainable(name string, args map[string]any) TrainableFactory {
	return func() Trainable { return &remoteTrainable{name: name, args: args} }
}

// RemoteAgentTrainable is AgentTrainable run in a gray actor per trial.
func RemoteAgentTrainable(alg, env string, envConfig map[string]any, seed int64) TrainableFactory {
	return RemoteTrainable(agentTrainableName, agentArgs(alg, env, envConfig, seed))
}

func agentArgs(alg, env string, envConfig map[string]any, seed int64) map[string]any {
	return map[string]any{"alg": alg, "env": env, "env_config": envConfig, "seed": seed}
}

type remoteTrainable struct {
	name  string
	args  map[string]any
	res   *gray.ActorOptions // what the actor reserves; nil: none
	dir   string             // the trial's folder on the driver
	h     gray.Handle[trialActor]
	alive bool
	dead  bool // a call said the actor is dead
	node  string
}

// reserve implements actorTrainable.
func (r *remoteTrainable) reserve(res Resources) {
	r.res = &gray.ActorOptions{CPUs: res.CPU - res.ExtraCPU, GPUs: res.GPU}
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
	var h gray.Handle[trialActor]
	if r.res != nil {
		h, err = trialActorType.RemoteWith(ctx, *r.res, r.name, string(args))
	} else {
		h, err = trialActorType.Remote(ctx, r.name, string(args))
	}
	if err != nil {
		return err
	}
	r.h, r.alive, r.dir = h, true, dir
	r.node, err = call(ctx, r, trialSetup.Remote(h, string(cfg)))
	return err
}

// call waits for a call's result, noting a dead actor (its node died,
// or its process) so that Stop does not call it again.
func call[T any](ctx context.Context, r *remoteTrainable, ref gray.Ref[T]) (T, error) {
	v, err := gray.Get(ctx, ref)
	if errors.Is(err, gray.ErrActorDead) {
		r.dead = true
	}
	return v, err
}

func (r *remoteTrainable) Step(ctx context.Context) (map[string]any, error) {
	rep, err := call(ctx, r, trialStep.Remote(r.h))
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

// Save has the actor write a checkpoint on its node and unpacks it into
// dir, on this machine.
func (r *remoteTrainable) Save(ctx context.Context, dir string) error {
	// A large reply is read straight from shared memory; it stays valid
	// while rep is in use, whatever becomes of its Ref.
	rep, err := call(ctx, r, trialSave.Remote(r.h))
	if err != nil {
		return err
	}
	if afterSaveReply != nil {
		afterSaveReply()
	}
	if err := unpackDir(rep.Checkpoint, dir); err != nil {
		return err
	}
	return r.keepFiles(rep.Files)
}

// afterSaveReply, set by tests, runs between Save's reply and its
// unpacking (a garbage collection there must not unmap the reply).
var afterSaveReply func()

// keepFiles unpacks files the trainable wrote on its node into the
// trial's folder.
func (r *remoteTrainable) keepFiles(files []byte) error {
	if len(files) == 0 || r.dir == "" {
		return nil
	}
	return unpackDir(files, r.dir)
}

// Restore sends the checkpoint in dir (on this machine) to the actor.
func (r *remoteTrainable) Restore(ctx context.Context, dir string) error {
	archive, err := packDir(dir, nil)
	if err != nil {
		return err
	}
	_, err = call(ctx, r, trialRestore.Remote(r.h, archive))
	return err
}

// Stop asks the trainable to stop, keeps what it wrote since the last
// checkpoint, then ends its worker process (at once when the actor is
// dead: its calls fail with gray.ErrActorDead).
func (r *remoteTrainable) Stop() error {
	if !r.alive {
		return nil
	}
	r.alive = false
	if r.dead {
		// Its node or process died: what it had not checkpointed is
		// lost, and the runner restarts the trial from its checkpoint.
		_ = gray.Kill(r.h)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	files, err := call(ctx, r, trialStop.Remote(r.h))
	if err == nil {
		err = r.keepFiles(files)
	}
	if r.dead {
		// It died while stopping (its node, say): a trial that was ending
		// has all its results, so that is no failure.
		err = nil
	}
	if kerr := gray.Kill(r.h); err == nil {
		err = kerr
	}
	return err
}
