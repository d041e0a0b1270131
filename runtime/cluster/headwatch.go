package cluster

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/monitor"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
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
	links := &headLinks{ctx: ctx, store: store, token: cfg.Token, retry: interval, links: map[string]*headLink{}}
	defer links.wg.Wait()
	m := &monitor.Monitor{
		Store:   store,
		Timeout: cfg.HeadTimeout,
		Confirm: 2 * interval,
		Watch: func(id string) bool {
			if id == cfg.ID || !heads.isHead(id) {
				return false
			}
			links.follow(id)
			return true
		},
		Unreachable: links.unreachable,
		OnSilent: func(id, reason string) {
			log.Printf("gray: node %s: the head node %s is dead (%s): no node's death is detected and no driver can use the head's machine until a head runs again; %s", cfg.ID, id, reason, HeadRestartHint)
		},
		Logf: func(string, ...any) {}, // the heartbeater reports Redis trouble
	}
	_ = m.Run(ctx)
}

// headLinks holds a connection to each live head (a "watch": proto.go),
// and says since when one could not be held.
type headLinks struct {
	ctx   context.Context
	store *control.Redis
	token []byte
	retry time.Duration // between attempts to connect again
	wg    sync.WaitGroup

	mu    sync.Mutex
	links map[string]*headLink // by head ID, while followed
}

// headLink is the state of the connection to one head.
type headLink struct {
	down  bool      // no connection is held
	since time.Time // when it was lost (or the first attempt failed)
}

// follow starts holding a connection to head id, unless one is held.
func (h *headLinks) follow(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.links[id]; ok || h.ctx.Err() != nil {
		return
	}
	l := &headLink{}
	h.links[id] = l
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.hold(id, l)
		h.mu.Lock()
		delete(h.links, id)
		h.mu.Unlock()
	}()
}

func (h *headLinks) unreachable(id string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.links[id]
	if !ok || !l.down {
		return time.Time{}, false
	}
	return l.since, true
}

// hold connects to head id at the address the node table gives it, and
// again whenever the connection ends, until the head is no longer alive in
// the table (it is followed again should it come back) or ctx ends.
func (h *headLinks) hold(id string, l *headLink) {
	for h.ctx.Err() == nil {
		n, ok, err := h.store.Node(h.ctx, id)
		switch {
		case err != nil: // Redis away: nothing to judge by
		case !ok || !n.Alive:
			return
		default:
			err = h.watch(id, n.NodeAddr, func() {
				h.mu.Lock()
				l.down = false
				h.mu.Unlock()
			})
			h.mu.Lock()
			if !l.down {
				l.down, l.since = true, time.Now()
			}
			h.mu.Unlock()
			if err == nil {
				continue // it was held, then lost: try again at once
			}
		}
		select {
		case <-h.ctx.Done():
		case <-time.After(h.retry):
		}
	}
}

// watch opens a watch on the head at addr, calls up once the head
// welcomed it, and returns when it ends: nil if it was up, else why it
// could not be opened.
func (h *headLinks) watch(id, addr string, up func()) error {
	ctx, cancel := context.WithTimeout(h.ctx, time.Second)
	c, err := transfer.Dial(ctx, addr, h.token)
	cancel()
	if err != nil {
		return err
	}
	conn := wire.New(c)
	defer conn.Close()
	stop := context.AfterFunc(h.ctx, func() { conn.Abort() })
	defer stop()
	if err := conn.Send(msgWatch, func(b []byte) []byte { return b }); err != nil {
		return err
	}
	typ, payload, err := conn.Recv()
	if err != nil {
		return err
	}
	dec := wire.Dec{B: payload}
	status, who := dec.Byte(), dec.String()
	if typ != msgWelcome || dec.Err != nil || status != 0 || who != id {
		return fmt.Errorf("cluster: %s answered the watch of head %s as %q (message %d)", addr, id, who, typ)
	}
	up()
	for {
		if _, _, err := conn.Recv(); err != nil {
			return nil
		}
	}
}

// watched holds a watch (msgWatch) of another node on this head: it says
// who answers, then reads until the connection ends (the other node
// stopped) or the daemon ends.
func (d *daemon) watched(ctx context.Context, conn *wire.Conn) {
	d.mu.Lock()
	if d.watchers == nil { // the daemon is ending
		d.mu.Unlock()
		return
	}
	d.watchers[conn] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.watchers, conn)
		d.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { conn.Abort() })
	defer stop()
	if err := conn.Send(msgWelcome, func(b []byte) []byte {
		b = append(b, 0)
		b = wire.AppendString(b, d.cfg.ID)
		return appendInts(appendRes(b, task.Resources{}), nil)
	}); err != nil {
		return
	}
	for {
		if _, _, err := conn.Recv(); err != nil {
			return
		}
	}
}
