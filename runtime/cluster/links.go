package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/transfer"
	"github.com/gray-ml/gray/runtime/wire"
)

// Links holds a connection to each node it follows (a "watch": proto.go)
// while the node table lists it alive, and says since when one could not
// be held: a monitor's Unreachable. Every node holds one to the head
// (headwatch.go), and the head's monitor one to every other node, so that
// a node whose process died is declared dead within a few heartbeat
// periods instead of the node timeout.
type Links struct {
	ctx   context.Context
	store *control.Redis
	token []byte
	retry time.Duration // between attempts to connect again
	wg    sync.WaitGroup

	mu    sync.Mutex
	links map[string]*nodeLink // by node ID, while followed
}

// nodeLink is the state of the connection to one node.
type nodeLink struct {
	down  bool      // no connection is held
	since time.Time // when it was lost (or the first attempt failed)
}

// NewLinks returns Links that hold their connections until ctx ends, with
// the cluster token, trying again every retry to open one that failed.
func NewLinks(ctx context.Context, store *control.Redis, token []byte, retry time.Duration) *Links {
	return &Links{ctx: ctx, store: store, token: token, retry: retry, links: map[string]*nodeLink{}}
}

// Wait waits, once the context given to NewLinks ended, until every
// connection is closed.
func (h *Links) Wait() { h.wg.Wait() }

// Follow starts holding a connection to node id, unless one is held.
func (h *Links) Follow(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.links[id]; ok || h.ctx.Err() != nil {
		return
	}
	l := &nodeLink{}
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

// Unreachable says since when no connection to node id could be held
// (ok false while one is, or the node is not followed).
func (h *Links) Unreachable(id string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.links[id]
	if !ok || !l.down {
		return time.Time{}, false
	}
	return l.since, true
}

// hold connects to node id at the address the node table gives it, and
// again whenever the connection ends, until the node is no longer alive in
// the table (it is followed again should it come back) or ctx ends.
func (h *Links) hold(id string, l *nodeLink) {
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
			// A dead process refuses or resets at once; one that is only
			// slow or stopped (SIGSTOP, a loaded machine) lets a dial or
			// handshake time out. Only the first is a sign of death: the
			// second is left to the node timeout, as a slow node's is.
			if !timedOut(err) {
				h.mu.Lock()
				if !l.down {
					l.down, l.since = true, time.Now()
				}
				h.mu.Unlock()
			}
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

// watch opens a watch on node id at addr, calls up once the node
// welcomed it, and returns when it ends: nil if it was up, else why it
// could not be opened.
func (h *Links) watch(id, addr string, up func()) error {
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
		return fmt.Errorf("cluster: %s answered the watch of node %s as %q (message %d)", addr, id, who, typ)
	}
	up()
	for {
		if _, _, err := conn.Recv(); err != nil {
			return nil
		}
	}
}

// watched holds another node's watch (msgWatch) of this one: it says who
// answers, then reads until the connection ends (the other node
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

// timedOut reports whether err is a dial or handshake that ran out of
// time, as with a peer that is alive but slow, rather than refused.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
