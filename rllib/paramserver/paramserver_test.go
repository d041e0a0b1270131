package paramserver

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/models"
	"github.com/gray-ml/gray/rllib/internal/agenttest"
)

// TestMain serves server actors when the test binary runs as a gray worker,
// and starts the runtime for the tests.
func TestMain(m *testing.M) { agenttest.Main(m, 4) }

func weights() Named {
	return Named{
		"w1": {1, 2, 3, 4},
		"b1": {0.5, -0.5},
		"w2": {1, 1, 1},
		"b2": {0},
	}
}

func newClient(t *testing.T, cfg Config, init Named) *Client {
	t.Helper()
	c, err := New(context.Background(), cfg, init)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantPulled pulls c's weights and compares them with want (equalNamed).
func wantPulled(t *testing.T, c *Client, want Named, tol float64) {
	t.Helper()
	got, err := c.Pull(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	equalNamed(t, got, want, tol)
}

func equalNamed(t *testing.T, got, want Named, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got keys %v, want %v", got.Keys(), want.Keys())
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("key %q: got %d values, want %d", k, len(g), len(w))
		}
		for i := range w {
			if math.Abs(g[i]-w[i]) > tol {
				t.Fatalf("key %q value %d: got %v, want %v", k, i, g[i], w[i])
			}
		}
	}
}

func TestPushPull(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Config{}, weights())
	wantPulled(t, c, weights(), 0)

	if err := c.Push(ctx, Named{"w1": {1, 1, 1, 1}, "b2": {2}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Pull(ctx, "w1", "b2")
	if err != nil {
		t.Fatal(err)
	}
	equalNamed(t, got, Named{"w1": {2, 3, 4, 5}, "b2": {2}}, 0)
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Config{}, weights())
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"pull unknown key", func() error { _, err := c.Pull(ctx, "nope"); return err }, `unknown key "nope"`},
		{"push unknown key", func() error { return c.Push(ctx, Named{"nope": {1}}) }, `unknown key "nope"`},
		{"push wrong length", func() error { return c.Push(ctx, Named{"w1": {1}}) }, `has 1 values, the weights have 4`},
		{"push NaN", func() error { return c.Push(ctx, Named{"b2": {math.NaN()}}) }, `is NaN`},
		{"unknown optimizer", func() error {
			_, err := New(ctx, Config{Server: ServerConfig{Optimizer: "rmsprop"}}, weights())
			return err
		}, `unknown optimizer "rmsprop"`},
		{"too many shards", func() error { _, err := New(ctx, Config{Shards: 5}, weights()); return err }, `5 shards need at least 5 keys`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// A rejected push changed nothing.
	wantPulled(t, c, weights(), 0)
}

// putGrads puts one gradient per worker into the object store.
func putGrads(t *testing.T, grads []Named) []gray.Ref[Named] {
	t.Helper()
	refs := make([]gray.Ref[Named], len(grads))
	for i, g := range grads {
		r, err := gray.Put(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = r
	}
	return refs
}

func TestSyncAveragingIsExact(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Config{Shards: 2, Server: ServerConfig{Optimizer: OptSGD, LR: 0.5}}, weights())
	grads := []Named{
		{"w1": {1, 2, 3, 4}, "b1": {1, 1}, "w2": {0, 0, 0}, "b2": {4}},
		{"w1": {3, 2, 1, 0}, "b1": {-1, 3}, "w2": {2, 4, 6}, "b2": {0}},
	}
	if err := c.ApplyGradients(ctx, putGrads(t, grads)); err != nil {
		t.Fatal(err)
	}
	got, err := c.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// w -= 0.5 * mean(g)
	want := Named{
		"w1": {1 - 0.5*2, 2 - 0.5*2, 3 - 0.5*2, 4 - 0.5*2},
		"b1": {0.5 - 0.5*0, -0.5 - 0.5*2},
		"w2": {1 - 0.5*1, 1 - 0.5*2, 1 - 0.5*3},
		"b2": {0 - 0.5*2},
	}
	equalNamed(t, got, want, 0)
}

// Pushes from one client apply in submission order: with Adam the result
// depends on the order, so it must equal a local Adam run in that order.
func TestAsyncAppliesInOrder(t *testing.T) {
	ctx := context.Background()
	init := Named{"w": {0.1, -0.2, 0.3}}
	c := newClient(t, Config{Server: ServerConfig{Optimizer: OptAdam, LR: 0.1}}, init)
	local := init.Clone()
	opt := models.NewAdam(0.1)
	refs := make([]gray.Ref[int64], 0, 20)
	for i := 0; i < 20; i++ {
		g := Named{"w": {float64(i), float64(i * i % 7), -float64(i % 3)}}
		refs = append(refs, pushMethod.Remote(c.Handles[0], g))
		if err := opt.Step(local["w"], g["w"]); err != nil {
			t.Fatal(err)
		}
	}
	versions, err := gray.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range versions {
		if v != int64(i+1) {
			t.Fatalf("push %d applied as version %d, want %d", i+1, v, i+1)
		}
	}
	wantPulled(t, c, local, 1e-12)
}

func TestShardingSplitsAndReassembles(t *testing.T) {
	ctx := context.Background()
	init := weights()
	c := newClient(t, Config{Shards: 3}, init)
	keys, err := c.ShardKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for s, ks := range keys {
		if len(ks) == 0 {
			t.Fatalf("shard %d holds no keys: %v", s, keys)
		}
		for _, k := range ks {
			if prev, dup := seen[k]; dup {
				t.Fatalf("key %q on shards %d and %d", k, prev, s)
			}
			seen[k] = s
			if c.ShardOf(k) != s {
				t.Fatalf("key %q is on shard %d but the client routes it to %d", k, s, c.ShardOf(k))
			}
		}
	}
	if len(seen) != len(init) {
		t.Fatalf("shards hold %d keys, want %d", len(seen), len(init))
	}
	wantPulled(t, c, init, 0)
}

// A client of two shards computes exactly what one server does, for both
// the asynchronous and the synchronous path, with large vectors going
// through the object store by reference.
func TestTwoShardsEqualOne(t *testing.T) {
	ctx := context.Background()
	init := bigWeights()
	cfg := ServerConfig{Optimizer: OptAdam, LR: 0.01}
	one := newClient(t, Config{Shards: 1, Server: cfg}, init)
	two := newClient(t, Config{Shards: 2, Server: cfg}, init)
	grad := func(seed int) Named { return gradOf(init, seed) }
	for step := 0; step < 3; step++ {
		for _, c := range []*Client{one, two} {
			if err := c.Push(ctx, grad(step)); err != nil {
				t.Fatal(err)
			}
			if err := c.ApplyGradients(ctx, putGrads(t, []Named{grad(step + 10), grad(step + 20)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := one.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := two.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	equalNamed(t, b, a, 0)
}
