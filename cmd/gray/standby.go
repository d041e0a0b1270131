package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/monitor"
)

// headBeats is how many heartbeat periods a standby watches a head the
// table still lists alive before it takes over.
const headBeats = 3

// refuseLiveHead keeps a standby head (`gray start --head
// --redis-address`) from taking over a cluster whose head still runs: two
// heads would both monitor and prune the cluster. A head the table lists
// alive is watched for headBeats heartbeat periods (interval, 0: the
// default); one whose heartbeat moves meanwhile is alive. A killed head,
// declared dead or not yet (a cluster with no other node to declare it),
// does not beat, and the standby goes ahead. Heartbeats are compared with
// themselves, never with this machine's clock.
func refuseLiveHead(ctx context.Context, store *control.Redis, interval time.Duration) error {
	if interval <= 0 {
		interval = monitor.DefaultInterval
	}
	heads := func() (map[string]control.NodeInfo, error) {
		nodes, err := store.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]control.NodeInfo{}
		for _, n := range nodes {
			if n.Head && n.Alive {
				out[n.ID] = n
			}
		}
		return out, nil
	}
	before, err := heads()
	if err != nil || len(before) == 0 {
		return err
	}
	t := time.NewTimer(headBeats * interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	after, err := heads()
	if err != nil {
		return err
	}
	for id, n := range after {
		if b, ok := before[id]; ok && n.Heartbeat.After(b.Heartbeat) {
			return fmt.Errorf("the cluster's head %s (%s) is alive: a standby head takes over only from a dead one; stop that head first (gray stop on its machine), or join as a node (gray start --address)", id, n.IP)
		}
	}
	return nil
}
