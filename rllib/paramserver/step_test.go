package paramserver

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
)

// replica is a worker stand-in that keeps the shipped weights in a View.
type replica struct{ view View }

var (
	replicaActor = gray.Actor0("paramserver.testReplica", func(ctx context.Context) (*replica, error) { return &replica{}, nil })
	replicaSet   = gray.Method2(replicaActor, "SetWeights", func(r *replica, ctx context.Context, shard int, part gray.Shared[Pulled]) (int64, error) {
		return r.view.Set(shard, part)
	})
	// replicaWeights returns a copy of what the replica sees.
	replicaWeights = gray.Method0(replicaActor, "Weights", func(r *replica, ctx context.Context) (Named, error) {
		return r.view.Weights().Clone(), nil
	})
)

func bigWeights() Named {
	init := Named{"big": make([]float64, 20000), "small": {1, 2}, "mid": make([]float64, 300)}
	for i := range init["big"] {
		init["big"][i] = math.Sin(float64(i))
	}
	return init
}

func gradOf(init Named, seed int) Named {
	g := Named{}
	for k, v := range init {
		g[k] = make([]float64, len(v))
		for i := range g[k] {
			g[k][i] = math.Cos(float64(seed*7 + i))
		}
	}
	return g
}

// Step's references carry the new weights to a replica, which sees
// exactly w - lr·mean(g) whichever shard holds which key.
func TestStepShipsWeightsToAView(t *testing.T) {
	ctx := context.Background()
	init := bigWeights()
	grads := []Named{gradOf(init, 1), gradOf(init, 2)}
	want := init.Clone()
	for k, w := range want {
		for i := range w {
			w[i] -= 0.5 * (grads[0][k][i] + grads[1][k][i]) / 2
		}
	}
	for _, shards := range []int{1, 2} {
		t.Run(map[int]string{1: "one shard", 2: "two shards"}[shards], func(t *testing.T) {
			c := newClient(t, Config{Shards: shards, Server: ServerConfig{Optimizer: OptSGD, LR: 0.5}}, init)
			h, err := replicaActor.Remote(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = gray.Kill(h) })
			refs, err := c.Step(ctx, putGrads(t, grads))
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != shards {
				t.Fatalf("Step returned %d references for %d shards", len(refs), shards)
			}
			var versions []gray.Ref[int64]
			for s, r := range refs {
				versions = append(versions, replicaSet.Remote(h, s, r))
			}
			vs, err := gray.GetAll(ctx, versions)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(vs, func(v int64) bool { return v != 1 }) {
				t.Fatalf("replica saw versions %v, want 1 from every shard", vs)
			}
			got, err := gray.Get(ctx, replicaWeights.Remote(h))
			if err != nil {
				t.Fatal(err)
			}
			equalNamed(t, got, want, 1e-12)
			wantPulled(t, c, want, 0)
		})
	}
}

// A step with a bad gradient fails naming the cause and changes nothing;
// the next good step applies as if the bad one had never been sent.
func TestStepRejectsBadGradients(t *testing.T) {
	ctx := context.Background()
	init := bigWeights()
	good := gradOf(init, 3)
	lacking := good.Clone()
	delete(lacking, "mid")
	short := good.Clone()
	short["mid"] = short["mid"][:10]
	nan := good.Clone()
	nan["big"][7] = math.NaN()
	tests := []struct {
		name  string
		grads []Named
		want  string
	}{
		{"lacks a key", []Named{good, lacking}, `lacks key "mid"`},
		{"wrong length", []Named{short, good}, `key "mid" has 10 values, the weights have 300`},
		{"NaN", []Named{good, nan}, `is NaN`},
	}
	c := newClient(t, Config{Server: ServerConfig{Optimizer: OptSGD, LR: 0.5}}, init)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs, err := c.Step(ctx, putGrads(t, tt.grads))
			if err != nil {
				t.Fatal(err)
			}
			_, err = gray.Get(ctx, refs[0])
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			wantPulled(t, c, init, 0)
		})
	}
	if err := c.ApplyGradients(ctx, putGrads(t, []Named{good})); err != nil {
		t.Fatal(err)
	}
	want := init.Clone()
	for k, w := range want {
		for i := range w {
			w[i] -= 0.5 * good[k][i]
		}
	}
	wantPulled(t, c, want, 0)
	if _, err := c.Step(ctx, nil); err == nil {
		t.Fatal("a step without gradients was accepted")
	}
}

func TestViewMergesPartsAndRefusesOverlap(t *testing.T) {
	var v View
	if _, err := v.Set(1, gray.SharedValue(Pulled{Weights: Named{"b": {2}}, Version: 4})); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Set(0, gray.SharedValue(Pulled{Weights: Named{"a": {1}}, Version: 3})); err != nil {
		t.Fatal(err)
	}
	equalNamed(t, v.Weights(), Named{"a": {1}, "b": {2}}, 0)
	if got := v.Versions(); !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("versions %v, want [3 4]", got)
	}
	// A newer part replaces the old one.
	if _, err := v.Set(1, gray.SharedValue(Pulled{Weights: Named{"b": {5}}, Version: 5})); err != nil {
		t.Fatal(err)
	}
	equalNamed(t, v.Weights(), Named{"a": {1}, "b": {5}}, 0)
	if _, err := v.Set(2, gray.SharedValue(Pulled{Weights: Named{"a": {9}}})); err == nil || !strings.Contains(err.Error(), `key "a" of shard 2 is already in shard 0's part`) {
		t.Fatalf("overlapping part: got %v", err)
	}
	if _, err := v.Set(-1, gray.SharedValue(Pulled{})); err == nil {
		t.Fatal("a negative shard was accepted")
	}
	if err := v.Release(); err != nil {
		t.Fatal(err)
	}
	if len(v.Weights()) != 0 {
		t.Fatalf("a released View still holds %v", v.Weights().Keys())
	}
}
