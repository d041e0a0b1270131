package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/redis/go-redis/v9"
)

// The object-location table: per job, gray:job:<job>:loc:<object> is the
// set of the nodes holding a copy, and gray:job:<job>:held:<node> the set of
// the objects a node holds, the index that lets a dead node's entries be
// removed without scanning every object. A node's entries go when it is
// declared dead (the head's monitor calls ForgetNode; the driver queues
// ForgetNodeQueued when it drops the node) and when a new process of a node
// registers under the ID of an old one (RegisterNode), whose store started
// empty.

// AddLocation records, in the next batch, that a node holds a copy of an
// object.
func (r *Redis) AddLocation(id ids.ObjectID, node string) {
	loc, held, obj := r.jobKey("loc", id.String()), r.jobKey("held", node), id.String()
	r.enqueue(func(ctx context.Context, p redis.Pipeliner) {
		p.SAdd(ctx, loc, node)
		p.SAdd(ctx, held, obj)
	})
}

// RemoveLocation records, in the next batch, that a node no longer holds
// an object.
func (r *Redis) RemoveLocation(id ids.ObjectID, node string) {
	loc, held, obj := r.jobKey("loc", id.String()), r.jobKey("held", node), id.String()
	r.enqueue(func(ctx context.Context, p redis.Pipeliner) {
		p.SRem(ctx, loc, node)
		p.SRem(ctx, held, obj)
	})
}

// Locations returns the nodes known to hold an object, sorted.
func (r *Redis) Locations(ctx context.Context, id ids.ObjectID) ([]string, error) {
	vs, err := r.c.SMembers(ctx, r.jobKey("loc", id.String())).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the locations of %s: %w", id, err)
	}
	sort.Strings(vs)
	return vs, nil
}

// Held returns the objects this client's job lists on a node, sorted.
func (r *Redis) Held(ctx context.Context, node string) ([]string, error) {
	vs, err := r.c.SMembers(ctx, r.jobKey("held", node)).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the objects of node %s: %w", node, err)
	}
	sort.Strings(vs)
	return vs, nil
}

// forgetNodeSrc removes node ARGV[2] from the location set of every object
// its index KEYS[1] lists (the sets' keys are ARGV[1] followed by the
// object), then the index. It returns how many objects it listed.
const forgetNodeSrc = `local objs = redis.call('SMEMBERS', KEYS[1])
for _, o in ipairs(objs) do redis.call('SREM', ARGV[1] .. o, ARGV[2]) end
redis.call('DEL', KEYS[1])
return #objs`

// ForgetNodeQueued removes, in the next batch, every entry of this job's
// location table for node: the driver dropped it (it died). Queued after
// the job's earlier writes about the node, it also undoes those that reach
// Redis after the monitor's ForgetNode.
func (r *Redis) ForgetNodeQueued(node string) {
	held, prefix := r.jobKey("held", node), r.jobKey("loc")+":"
	r.enqueue(func(ctx context.Context, p redis.Pipeliner) {
		p.Eval(ctx, forgetNodeSrc, []string{held}, prefix, node)
	})
}

// ForgetNode removes every entry for node from the location tables of
// every job (directly, not batched), and reports how many objects they
// listed on it. The head's monitor calls it when it declares the node dead,
// which also covers jobs whose driver died.
func (r *Redis) ForgetNode(ctx context.Context, node string) (int, error) {
	jobs, err := r.c.HKeys(ctx, keyJobs).Result()
	if err != nil || len(jobs) == 0 {
		return 0, wrapForget(node, err)
	}
	// One round trip for every job, ended ones included.
	cmds := make([]*redis.Cmd, len(jobs))
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range jobs {
			base := "gray:job:" + j + ":"
			cmds[i] = p.Eval(ctx, forgetNodeSrc, []string{base + "held:" + node}, base+"loc:", node)
		}
		return nil
	})
	if err != nil {
		return 0, wrapForget(node, err)
	}
	total := 0
	for _, c := range cmds {
		n, _ := c.Int()
		total += n
	}
	return total, nil
}

func wrapForget(node string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("control: forgetting the objects of node %s: %w", node, err)
}

// replaced reports whether the node table holds a record of node n.ID of
// another process than n (an earlier run of the node, restarted under the
// same ID: it started at another time) or one declared dead: then the
// locations listed on the node are of that run's store, which is gone.
func (r *Redis) replaced(ctx context.Context, n NodeInfo) (bool, error) {
	m, err := r.c.HMGet(ctx, nodeKey(n.ID), "info", "alive").Result()
	if err != nil {
		return false, fmt.Errorf("control: reading node %s: %w", n.ID, err)
	}
	info, _ := m[0].(string)
	if info == "" {
		return false, nil // never registered (or Redis lost it, and its locations with it)
	}
	var old NodeInfo
	if err := json.Unmarshal([]byte(info), &old); err != nil {
		return true, nil
	}
	alive, _ := m[1].(string)
	return alive != "1" || !old.Started.Equal(n.Started), nil
}
