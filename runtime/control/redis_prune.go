package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultKeepEnded is how long dead nodes, ended jobs, ended tasks and
// dead actors stay listed when the head was given no other setting.
const DefaultKeepEnded = 10 * time.Minute

// PruneStats counts what one Prune removed from the tables.
type PruneStats struct {
	Nodes, Jobs, Tasks, Actors int
}

// Prune bounds the cluster's tables: nodes dead for longer than keep
// leave the node table, and jobs ended longer than keep ago leave the job
// table with every job-scoped key (their tasks, actors, error log,
// object locations). In jobs still listed, tasks that ended and actors
// that died longer than keep ago leave the task and actor tables. A job
// whose driver stopped publishing its load without ending it (killed) is
// recorded as ended now. The head calls it
// periodically; any number of callers may, since each step is idempotent.
func (r *Redis) Prune(ctx context.Context, keep time.Duration) (PruneStats, error) {
	var st PruneStats
	now := time.Now()
	nodes, err := r.c.SMembers(ctx, keyNodes).Result()
	if err != nil {
		return st, fmt.Errorf("control: pruning the node table: %w", err)
	}
	for _, id := range nodes {
		v, err := r.c.HMGet(ctx, nodeKey(id), "alive", "died").Result()
		if err != nil {
			return st, fmt.Errorf("control: pruning node %s: %w", id, err)
		}
		alive, _ := v[0].(string)
		died, _ := v[1].(string)
		if v[0] == nil { // a set member without a record
			r.c.SRem(ctx, keyNodes, id)
			continue
		}
		if alive != "0" {
			continue
		}
		ms, err := strconv.ParseInt(died, 10, 64)
		if err != nil { // declared dead before deaths were timed: from now
			r.c.HSetNX(ctx, nodeKey(id), "died", now.UnixMilli())
			continue
		}
		if now.Sub(time.UnixMilli(ms)) < keep {
			continue
		}
		if _, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SRem(ctx, keyNodes, id)
			p.Del(ctx, nodeKey(id))
			return nil
		}); err != nil {
			return st, fmt.Errorf("control: pruning node %s: %w", id, err)
		}
		st.Nodes++
	}
	jobs, err := r.Jobs(ctx)
	if err != nil {
		return st, err
	}
	for _, j := range jobs {
		if j.driverGone {
			// Jobs reads it as ended now; record that for good.
			b, _ := json.Marshal(j)
			r.c.HSet(ctx, keyJobs, j.ID, b)
		}
		if j.Ended.IsZero() || now.Sub(j.Ended) < keep {
			t, a, err := r.pruneEnded(ctx, j.ID, keep)
			st.Tasks += t
			st.Actors += a
			if err != nil {
				return st, err
			}
			continue
		}
		if err := r.dropJob(ctx, j.ID); err != nil {
			return st, err
		}
		st.Jobs++
	}
	return st, nil
}

// dropJob removes a job's record and every job-scoped key.
func (r *Redis) dropJob(ctx context.Context, id string) error {
	iter := r.c.Scan(ctx, 0, "gray:job:"+id+":*", 512).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("control: listing the keys of job %s: %w", id, err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 512)
		if err := r.c.Del(ctx, keys[:n]...).Err(); err != nil {
			return fmt.Errorf("control: dropping job %s: %w", id, err)
		}
		keys = keys[n:]
	}
	if err := r.c.HDel(ctx, keyJobs, id).Err(); err != nil {
		return fmt.Errorf("control: dropping job %s: %w", id, err)
	}
	return nil
}
