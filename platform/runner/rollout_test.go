package runner

import (
	"context"
	"testing"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/rllib"
)

// statefulAgent counts StartEpisode calls and the actions since the
// last one.
type statefulAgent struct {
	resets, sinceReset int
}

func (a *statefulAgent) Train(context.Context) (rllib.Result, error) { return rllib.Result{}, nil }
func (a *statefulAgent) Save(context.Context) (string, error)        { return "", nil }
func (a *statefulAgent) Restore(context.Context, string) error       { return nil }
func (a *statefulAgent) Iteration() int                              { return 0 }
func (a *statefulAgent) LogDir() string                              { return "" }
func (a *statefulAgent) Stop() error                                 { return nil }
func (a *statefulAgent) StartEpisode()                               { a.resets++; a.sinceReset = 0 }
func (a *statefulAgent) ComputeAction([]float64) ([]float64, error) {
	a.sinceReset++
	return []float64{0}, nil
}

// TestRolloutResetsRecurrentState checks that every episode of a rollout
// starts a recurrent agent from its zero state.
func TestRolloutResetsRecurrentState(t *testing.T) {
	env, err := envs.MakeVector("CartPole-v1", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	a := &statefulAgent{}
	for ep := range 2 {
		_, steps, err := episode(context.Background(), a, env, int64(ep), 1000, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.resets != ep+1 || a.sinceReset != steps {
			t.Fatalf("episode %d: %d resets, %d actions since the last (episode of %d steps)", ep+1, a.resets, a.sinceReset, steps)
		}
	}
}
