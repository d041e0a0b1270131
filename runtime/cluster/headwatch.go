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
// heartbeat (a monitor.Monitor limited to head nodes): when the head is
// silent past the node timeout, the node says so in its log, in one line
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

// watchHead runs until ctx ends, declaring a silent head dead (see
// above); self is this node's ID, timeout the silence that means death.
func watchHead(ctx context.Context, store *control.Redis, self string, timeout time.Duration) {
	heads := &headSet{store: store, head: map[string]bool{}}
	m := &monitor.Monitor{
		Store:   store,
		Timeout: timeout,
		Watch:   func(id string) bool { return id != self && heads.isHead(id) },
		OnSilent: func(id, reason string) {
			log.Printf("gray: node %s: the head node %s is dead (%s): no node's death is detected and no driver can use the head's machine until a head runs again; %s", self, id, reason, HeadRestartHint)
		},
		Logf: func(string, ...any) {}, // the heartbeater reports Redis trouble
	}
	_ = m.Run(ctx)
}
