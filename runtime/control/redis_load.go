package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/redis/go-redis/v9"
)

// JobLoad is what a job's driver runs where, as it last published it
// (PublishLoad): `gray status` shows it beside the nodes' own reports.
type JobLoad struct {
	// Nodes has one entry per node the job uses, the driver's own first.
	Nodes []JobNodeLoad
	// Waiting lists the job's requests that no node of the cluster can
	// hold now: they wait for a node that can to join.
	Waiting []task.Resources `json:",omitempty"`
	Updated time.Time
}

// JobNodeLoad is a job's use of one node.
type JobNodeLoad struct {
	Node string // the node's ID
	// Granted is what the job may use there; Used what its running tasks
	// and live actors hold of it.
	Granted, Used task.Resources
	Tasks, Actors int
}

// LoadTTL is how long a published load stays in Redis unless published
// again: a driver that died stops counting within it.
const LoadTTL = 5 * time.Second

// PublishLoad records the job's load. Like the other writes it is queued
// for the writer and never waits for Redis; the record expires after
// LoadTTL, so publish at least every LoadTTL/2 while the job runs.
func (r *Redis) PublishLoad(l JobLoad) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("control: encoding job %s's load: %w", r.job, err)
	}
	key := r.jobKey("load")
	r.enqueue(func(ctx context.Context, p redis.Pipeliner) {
		p.Set(ctx, key, b, LoadTTL)
	})
	return nil
}

// readLoads fills in the published load of each job.
func (r *Redis) readLoads(ctx context.Context, jobs []JobInfo) error {
	if len(jobs) == 0 {
		return nil
	}
	p := r.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(jobs))
	for i, j := range jobs {
		cmds[i] = p.Get(ctx, "gray:job:"+j.ID+":load")
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("control: reading the jobs' loads: %w", err)
	}
	for i, c := range cmds {
		b, err := c.Bytes()
		if err != nil {
			continue // none published, or expired: the driver is gone
		}
		var l JobLoad
		if json.Unmarshal(b, &l) == nil {
			jobs[i].Load = &l
		}
	}
	return nil
}
