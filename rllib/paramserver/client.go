package paramserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gray-ml/gray"
)

// DefaultRefThreshold is the number of values from which a shard's part of
// a push is put into the object store and passed by reference rather than
// inlined in the call (64 KiB of float64s).
const DefaultRefThreshold = 8192

// Config configures a sharded parameter server.
type Config struct {
	// Shards is the number of Server actors the keys are spread over
	// (0 means 1).
	Shards int
	// Server is every shard's update rule.
	Server ServerConfig
	// RefThreshold overrides DefaultRefThreshold (0: the default; negative:
	// always pass by reference).
	RefThreshold int
}

// Client talks to a sharded parameter server. Its fields are exported so
// that a Client can be passed to remote tasks and actors (its handles
// travel with it); treat them as read-only.
type Client struct {
	// Handles are the shard actors.
	Handles []gray.Handle[Server]
	// Assign maps each key to the index of its shard.
	Assign map[string]int
	// RefThreshold is the size from which a push is shipped by reference.
	RefThreshold int
}

// New starts cfg.Shards server actors holding init split by key. Keys go to
// shards greedily by size (largest first to the shard holding the fewest
// values), so the shards hold similar amounts and the split is the same on
// every run.
func New(ctx context.Context, cfg Config, init Named) (*Client, error) {
	if !gray.IsInitialized() {
		return nil, errors.New("paramserver: New needs the gray runtime: call gray.Init first")
	}
	shards := max(cfg.Shards, 1)
	if len(init) < shards {
		return nil, fmt.Errorf("paramserver: %d shards need at least %d keys, got %d; lower Shards", shards, shards, len(init))
	}
	if err := cfg.Server.Validate(); err != nil {
		return nil, err
	}
	threshold := cfg.RefThreshold
	if threshold == 0 {
		threshold = DefaultRefThreshold
	}
	c := &Client{Assign: AssignKeys(init, shards), RefThreshold: threshold}
	parts := c.split(init)
	for i, part := range parts {
		arg, err := c.ship(ctx, part)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		h, err := serverActor.Remote(ctx, cfg.Server, arg)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("paramserver: starting shard %d of %d: %w", i+1, shards, err)
		}
		c.Handles = append(c.Handles, h)
	}
	return c, nil
}

// AssignKeys maps keys to shards: largest vectors first, each to the shard
// holding the fewest values so far (ties: the lower shard, then key order).
func AssignKeys(init Named, shards int) map[string]int {
	keys := init.Keys()
	slices.SortStableFunc(keys, func(a, b string) int { return len(init[b]) - len(init[a]) })
	load := make([]int, shards)
	count := make([]int, shards)
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		best := 0
		for s := 1; s < shards; s++ {
			// An empty shard wins first, so every shard holds a key.
			if (count[s] == 0) != (count[best] == 0) {
				if count[s] == 0 {
					best = s
				}
				continue
			}
			if load[s] < load[best] {
				best = s
			}
		}
		out[k] = best
		load[best] += len(init[k])
		count[best]++
	}
	return out
}

// ShardOf is the shard index of key, or -1 for an unknown key.
func (c *Client) ShardOf(key string) int {
	if s, ok := c.Assign[key]; ok {
		return s
	}
	return -1
}

// split divides n by shard; every shard gets a (possibly empty) map.
func (c *Client) split(n Named) []Named {
	parts := make([]Named, max(len(c.Handles), maxShard(c.Assign)+1))
	for i := range parts {
		parts[i] = Named{}
	}
	for k, v := range n {
		parts[c.Assign[k]][k] = v
	}
	return parts
}

func maxShard(assign map[string]int) int {
	m := 0
	for _, s := range assign {
		m = max(m, s)
	}
	return m
}

// ship returns what to pass for part: the value itself when small, else a
// reference to one copy put into the object store.
func (c *Client) ship(ctx context.Context, part Named) (any, error) {
	if c.RefThreshold > 0 && part.Size() < c.RefThreshold {
		return part, nil
	}
	ref, err := gray.Put(ctx, part)
	if err != nil {
		return nil, fmt.Errorf("paramserver: putting %d values into the object store: %w", part.Size(), err)
	}
	return ref, nil
}

func (c *Client) checkKeys(keys []string) error {
	for _, k := range keys {
		if _, ok := c.Assign[k]; !ok {
			return fmt.Errorf("paramserver: unknown key %q; the server holds %d keys (Client.Assign lists them)", k, len(c.Assign))
		}
	}
	return nil
}

// Pull returns the weights of keys (every key when keys is empty), asking
// each shard that holds some of them in parallel.
func (c *Client) Pull(ctx context.Context, keys ...string) (Named, error) {
	if err := c.checkKeys(keys); err != nil {
		return nil, err
	}
	want := make([][]string, len(c.Handles))
	if len(keys) == 0 {
		for k, s := range c.Assign {
			want[s] = append(want[s], k)
		}
	}
	for _, k := range keys {
		want[c.Assign[k]] = append(want[c.Assign[k]], k)
	}
	var refs []gray.Ref[Pulled]
	for s, ks := range want {
		if len(ks) > 0 {
			refs = append(refs, pullMethod.Remote(c.Handles[s], ks))
		}
	}
	parts, err := gray.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("paramserver: pull: %w", err)
	}
	out := Named{}
	for _, p := range parts {
		for k, v := range p.Weights {
			out[k] = v
		}
	}
	return out, nil
}

// Push sends update to the shards holding its keys, which apply their
// parts as they arrive (the asynchronous server), and waits until every
// part is applied. A part of RefThreshold values or more is put into the
// object store once and passed by reference.
func (c *Client) Push(ctx context.Context, update Named) error {
	if err := c.checkKeys(update.Keys()); err != nil {
		return err
	}
	var refs []gray.Ref[int64]
	for s, part := range c.split(update) {
		if len(part) == 0 {
			continue
		}
		arg, err := c.ship(ctx, part)
		if err != nil {
			return err
		}
		refs = append(refs, pushMethod.Remote(c.Handles[s], arg))
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		return fmt.Errorf("paramserver: push: %w", err)
	}
	return nil
}

// Step submits one synchronous step and returns, without waiting, one
// reference per shard (in shard order) to that shard's new weights: every
// shard accumulates its keys of each gradient in grads (one per worker,
// each put into the object store once by its worker and read there in
// place) and takes one optimizer step on their mean. Hand the references
// to the workers of the next round (see View); a failed step makes them
// errors. Nothing is copied on the way: each gradient and each shard's new
// weights are written into the store once.
func (c *Client) Step(ctx context.Context, grads []gray.Ref[Named]) ([]gray.Ref[Pulled], error) {
	return c.step(ctx, grads, true)
}

func (c *Client) step(ctx context.Context, grads []gray.Ref[Named], pull bool) ([]gray.Ref[Pulled], error) {
	if len(grads) == 0 {
		return nil, errors.New("paramserver: a step needs at least one gradient")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]gray.Ref[Pulled], len(c.Handles))
	for s, h := range c.Handles {
		for _, g := range grads {
			accMethod.Remote(h, g)
		}
		out[s] = stepMethod.Remote(h, len(grads), pull)
	}
	return out, nil
}

// PullRefs returns, without waiting, one reference per shard (in shard
// order) to all of that shard's current weights: the first round's
// weights for a View.
func (c *Client) PullRefs(ctx context.Context) ([]gray.Ref[Pulled], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]gray.Ref[Pulled], len(c.Handles))
	for s, h := range c.Handles {
		out[s] = pullMethod.Remote(h, []string(nil))
	}
	return out, nil
}

// ApplyGradients is Step for a caller that pulls separately: every shard
// averages its keys over grads and takes one step, and ApplyGradients
// returns when every shard has (with the first shard's error, if any).
func (c *Client) ApplyGradients(ctx context.Context, grads []gray.Ref[Named]) error {
	refs, err := c.step(ctx, grads, false)
	if err != nil {
		return err
	}
	if _, err := gray.GetAll(ctx, refs); err != nil {
		return fmt.Errorf("paramserver: applying gradients: %w", err)
	}
	return nil
}

// ShardKeys asks each shard which keys it holds.
func (c *Client) ShardKeys(ctx context.Context) ([][]string, error) {
	refs := make([]gray.Ref[[]string], len(c.Handles))
	for s, h := range c.Handles {
		refs[s] = keysMethod.Remote(h)
	}
	out, err := gray.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("paramserver: listing shard keys: %w", err)
	}
	return out, nil
}

// Close kills the shard actors.
func (c *Client) Close() error {
	var errs []error
	for _, h := range c.Handles {
		errs = append(errs, gray.Kill(h))
	}
	c.Handles = nil
	return errors.Join(errs...)
}
