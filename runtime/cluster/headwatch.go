package cluster

import (
	"context"
	"log"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/monitor"
)

// Head failure.
//
// The head runs the cluster's monitor, which declares silent nodes dead;
// it cannot declare itself dead. So every other node watches the head's
// heartbeat (a monitor.Monitor limited to head nodes) and holds a
// connection to the head: when the head is silent past the node timeout,
// or its connection is lost and its heartbeat silent for two periods (a
// killed head closes its connections at once), the node says so in its log, in one line
// that names what to do, and declares the head dead, so `gray status`
// shows it and drivers stop using it. A head started again (`gray start
// --head` on its temp dir, or on a standby machine pointed at the same
// Redis with --redis-address) registers anew and takes over.

// HeadRestartHint is what to do when the head died, for messages.
const HeadRestartHint = "restart it with `gray start --head` on its machine (same --temp-dir), or on a standby machine with `gray start --head --redis-address <this cluster's address>` with the cluster token in GRAY_TOKEN"

// headSet tells head nodes from others by the node table, read again when
// a node it does not know appears.
type headSet struct {
	store *control.Redis
	mu    sync.Mutex
	head  map[string]bool
}

func (h *headSet) isHead(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if is, ok := h.head[id]; ok {
		return is
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	nodes, err := h.store.Nodes(ctx)
	if err != nil {
		return false
	}
	for _, n := range nodes {
		h.head[n.ID] = n.Head
	}
	return h.head[id]
}

// watchHead runs until ctx ends, declaring a dead head dead (see above).
// Two signs tell: the head's heartbeat silent past cfg.HeadTimeout, or,
// much sooner, the connection this node holds to the head lost and not
// taken again (a killed process closes its connections at once), with
// the heartbeat silent for two of its periods to confirm it. A head that
// is only slow keeps its connections, so only the timeout judges it.
func watchHead(ctx context.Context, store *control.Redis, cfg NodeConfig) {
	heads := &headSet{store: store, head: map[string]bool{}}
	interval := cfg.HeartbeatInterval
	if interval <= 0 {
		interval = monitor.DefaultInterval
	}
	links := NewLinks(ctx, store, cfg.Token, interval)
	defer links.Wait()
	m := &monitor.Monitor{
		Store:   store,
		Timeout: cfg.HeadTimeout,
		Confirm: 2 * interval,
		Watch: func(id string) bool {
			if id == cfg.ID || !heads.isHead(id) {
				return false
			}
			links.Follow(id)
			return true
		},
		Unreachable: links.Unreachable,
		OnSilent: func(id, reason string) {
			log.Printf("gray: node %s: the head node %s is dead (%s): no node's death is detected and no driver can use the head's machine until a head runs again; %s", cfg.ID, id, reason, HeadRestartHint)
		},
		Logf: func(string, ...any) {}, // the heartbeater reports Redis trouble
	}
	_ = m.Run(ctx)
}
