package control

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gray-ml/gray/runtime/machine"
	"github.com/redis/go-redis/v9"
)

// A node's machine history: its heartbeats carry a sample of the
// machine's CPU and memory use every MachineSampleEvery, and Redis keeps
// the last MachineHistorySpan of them in a list per node. Redis rather
// than the dashboard keeps them so that a dashboard opened at any time,
// from any machine, shows the whole last hour of every node; the list is
// bounded (machineHistoryLen entries, about 60 bytes each) and expires an
// hour after the node's last sample, so dead nodes leave nothing behind.
const (
	// MachineSampleEvery is how often a node samples its machine.
	MachineSampleEvery = 5 * time.Second
	// MachineHistorySpan is how far back a node's history goes.
	MachineHistorySpan = time.Hour
	machineHistoryLen  = int(MachineHistorySpan / MachineSampleEvery)
)

func nodeHistoryKey(id string) string { return "gray:nodehist:" + id }

// historyArgs are the heartbeat script's arguments for a sample: its JSON
// and time, or "" and 0 for none.
func historyArgs(s *machine.Sample) (string, int64) {
	if s == nil {
		return "", 0
	}
	b, err := json.Marshal(s)
	if err != nil { // a sample holds only numbers; NaN cannot come from /proc
		return "", 0
	}
	return string(b), s.T
}

// NodeHistories reads the machine history of each node in ids, oldest
// first; a node without one (an older node, or one that sent no sample
// yet) has none in the map.
func (r *Redis) NodeHistories(ctx context.Context, ids []string) (map[string][]machine.Sample, error) {
	out := make(map[string][]machine.Sample, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	p := r.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = p.LRange(ctx, nodeHistoryKey(id), 0, -1)
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("control: reading the nodes' machine history: %w", err)
	}
	for i, id := range ids {
		vals := cmds[i].Val()
		if len(vals) == 0 {
			continue
		}
		list := make([]machine.Sample, 0, len(vals))
		for _, v := range vals {
			var s machine.Sample
			if json.Unmarshal([]byte(v), &s) == nil {
				list = append(list, s)
			}
		}
		out[id] = list
	}
	return out, nil
}
