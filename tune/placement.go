package tune

import (
	"context"
	"errors"
	"fmt"

	"github.com/gray-ml/gray"
)

// Placement says where trials' trainables run.
type Placement string

// Placements.
const (
	// PlaceAuto runs trials in gray actors when gray runs on a cluster
	// (gray.OnCluster) and the trainable is one worker processes can make
	// (Registered, RemoteTrainable), else in this process.
	PlaceAuto Placement = ""
	// PlaceInProcess runs every trial's trainable in this process, as
	// goroutines: the fastest on one machine. Trainables that start gray
	// actors (an agent's rollout workers) still place those anywhere.
	PlaceInProcess Placement = "in-process"
	// PlaceActors runs each trial's trainable in a gray actor of its own,
	// reserving the trial's resources less ExtraCPU, on any node with
	// room. gray must be initialised, and the trainable made by Registered
	// or RemoteTrainable.
	PlaceActors Placement = "actors"
)

func (p Placement) check() error {
	switch p {
	case PlaceAuto, PlaceInProcess:
		return nil
	case PlaceActors:
		if !gray.IsInitialized() {
			return errors.New("tune: Placement actors runs trials in gray actors: call gray.Init first")
		}
		return nil
	}
	return fmt.Errorf("tune: Placement %q: use %q, %q or \"\" (auto)", string(p), PlaceInProcess, PlaceActors)
}

// Registered makes trainables of the one registered as name
// (RegisterTrainable) with args (which travel as JSON). Where they run
// follows Experiment.Placement: in this process, or each trial in a gray
// actor (RemoteTrainable); by default in actors when gray runs on a
// cluster, so that trials spread over its nodes. Called outside a runner,
// its trainables run in this process.
func Registered(name string, args map[string]any) TrainableFactory {
	return func() Trainable { return &registered{name: name, args: args} }
}

// registered is a trainable of Registered run in this process; the runner
// replaces it with a remoteTrainable when trials run in actors.
type registered struct {
	name  string
	args  map[string]any
	inner Trainable
}

func (r *registered) Setup(ctx context.Context, config map[string]any, dir string) error {
	mk, err := lookupTrainable(r.name)
	if err != nil {
		return err
	}
	if r.inner, err = mk(r.args); err != nil {
		return err
	}
	return r.inner.Setup(ctx, config, dir)
}

func (r *registered) Step(ctx context.Context) (map[string]any, error) { return r.inner.Step(ctx) }
func (r *registered) Save(ctx context.Context, dir string) error       { return r.inner.Save(ctx, dir) }
func (r *registered) Restore(ctx context.Context, dir string) error    { return r.inner.Restore(ctx, dir) }

func (r *registered) Stop() error {
	if r.inner == nil {
		return nil
	}
	return r.inner.Stop()
}

// actorTrainable is a trainable that runs in a gray actor: the runner
// tells it what the trial reserves before Setup.
type actorTrainable interface {
	reserve(Resources)
}

// inActors reports whether trials of exp run in gray actors, judging by
// a trainable its factory made.
func (e *Experiment) inActors(probe Trainable) (bool, error) {
	_, remote := probe.(actorTrainable)
	_, reg := probe.(*registered)
	switch {
	case remote:
		return true, nil
	case e.Placement == PlaceActors && !reg:
		return false, fmt.Errorf("tune: Placement actors runs trials in gray actors, so their worker processes must be able to make the trainable: "+
			"use tune.Registered or tune.RemoteTrainable with a name given to tune.RegisterTrainable (this one is a %T)", probe)
	case e.Placement == PlaceActors:
		return true, nil
	}
	return reg && e.Placement == PlaceAuto && gray.OnCluster(), nil
}

// placed returns the trainable a trial runs: tr, or, for trials in
// actors, the actor-backed trainable reserving res.
func placed(tr Trainable, actors bool, res Resources) Trainable {
	if reg, ok := tr.(*registered); ok && actors {
		tr = &remoteTrainable{name: reg.name, args: reg.args}
	}
	if a, ok := tr.(actorTrainable); ok {
		a.reserve(res)
	}
	return tr
}

// clusterResources returns what a cluster gray runs on offers in all
// (its live nodes), and false off a cluster.
func clusterResources() (Resources, bool) {
	if !gray.OnCluster() {
		return Resources{}, false
	}
	m := gray.ClusterResources()
	if m == nil || m["CPU"] <= 0 {
		return Resources{}, false
	}
	return Resources{CPU: m["CPU"], GPU: m["GPU"]}, true
}
