// Package monitor keeps a cluster's node table honest. Each node runs a
// Heartbeater, which registers it in the control store and reports it
// alive (with its load) every 200 ms; the head runs a Monitor, which
// declares a node dead when its heartbeats stop for Timeout (1.5 s by
// default) and so announces the death to everyone watching the node
// table. Both keep their state in the control store, so a restarted Redis
// or a restarted monitor carries on where the old one stopped.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gray-ml/gray/runtime/control"
)

// DefaultInterval is how often a Heartbeater reports by default.
const DefaultInterval = 200 * time.Millisecond

// DefaultTimeout is how long a Monitor waits for a heartbeat by default
// before it declares a node dead.
const DefaultTimeout = 1500 * time.Millisecond

// NodeRegistry is what a Heartbeater needs of the control store.
type NodeRegistry interface {
	RegisterNode(ctx context.Context, n control.NodeInfo) error
	Heartbeat(ctx context.Context, id string, load control.NodeLoad) error
}

// Heartbeater registers a node and reports it alive until its context
// ends. When the store has lost the node (Redis restarted without its
// append-only file) it registers it again.
type Heartbeater struct {
	Store NodeRegistry
	Node  control.NodeInfo
	// Load returns the node's load for each heartbeat; nil reports none.
	Load func() control.NodeLoad
	// Interval between heartbeats; 0 means DefaultInterval.
	Interval time.Duration
	// Logf reports trouble (Redis away, back again); nil means log.Printf.
	Logf func(format string, args ...any)
}

// Run registers the node and sends heartbeats until ctx ends (returning
// nil). It returns an error wrapping control.ErrNodeDead when the cluster
// declared the node dead: its work was given to others, and the node
// daemon must not go on as if it still owned it.
func (h *Heartbeater) Run(ctx context.Context) error {
	if h.Node.ID == "" {
		return errors.New("monitor: the heartbeater's node has no ID")
	}
	interval := h.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	logf := h.Logf
	if logf == nil {
		logf = log.Printf
	}
	load := func() control.NodeLoad {
		if h.Load == nil {
			return control.NodeLoad{}
		}
		return h.Load()
	}
	node := h.Node
	if node.Started.IsZero() {
		node.Started = time.Now()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	registered, failing := false, false
	for {
		var err error
		if !registered {
			node.Load = load()
			if err = h.Store.RegisterNode(ctx, node); err == nil {
				registered = true
			}
		} else {
			err = h.Store.Heartbeat(ctx, node.ID, load())
			switch {
			case errors.Is(err, control.ErrNodeDead):
				return fmt.Errorf("monitor: node %s: %w", node.ID, err)
			case errors.Is(err, control.ErrUnknownNode):
				logf("gray: node %s: the control store lost this node (Redis restarted without its data?); registering again", node.ID)
				registered = false
				continue
			}
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil && !failing:
			failing = true
			logf("gray: node %s: cannot reach the control store, retrying: %v", node.ID, err)
		case err == nil && failing:
			failing = false
			logf("gray: node %s: the control store answers again", node.ID)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// NodeWatcher is what a Monitor needs of the control store.
type NodeWatcher interface {
	HeartbeatStamps(ctx context.Context) (map[string]control.Stamp, error)
	// DeclareSilent declares node id dead unless its heartbeat is no
	// longer beat (it beat after the read that found it silent).
	DeclareSilent(ctx context.Context, id, beat, reason string) (bool, error)
	// ForgetNode removes a dead node's entries from the object-location
	// tables.
	ForgetNode(ctx context.Context, id string) (int, error)
}

// Monitor declares nodes dead when their heartbeats stop. It judges by
// its own clock, from when it saw each node's heartbeat change, so the
// nodes' clocks never matter. A Monitor started after another (or after
// Redis came back) first gives every node a full Timeout to be heard
// from, then carries on: its only state is the node table in Redis.
type Monitor struct {
	Store NodeWatcher
	// Timeout without a heartbeat after which a node is dead; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Poll is how often it reads the heartbeats; 0 means Timeout/10.
	Poll time.Duration
	// OnDeath, when set, is called after this monitor declared a node
	// dead, with how long it had been silent.
	OnDeath func(id, reason string, silent time.Duration)
	// Watch, when set, limits the monitor to the live nodes it accepts
	// (asked at every read): the nodes other than the head watch the head
	// this way, since the head's own monitor cannot declare it dead
	// (runtime/cluster's headwatch.go).
	Watch func(id string) bool
	// OnSilent, when set, is called once per silence of a watched node
	// past Timeout (or Confirm, see Unreachable), whether this monitor or
	// another declared it dead.
	OnSilent func(id, reason string)
	// Unreachable, when set, says since when a node has refused or
	// dropped the connection its caller keeps to it (ok false while one
	// is held). A process killed with SIGKILL closes its connections at
	// once, while one that is only slow keeps them: so an unreachable
	// node is dead once its heartbeat, too, is silent for Confirm, long
	// before Timeout, and a slow one still gets the whole Timeout.
	Unreachable func(id string) (since time.Time, ok bool)
	// Confirm is the heartbeat silence that confirms an unreachable node
	// dead; 0 means 2×DefaultInterval.
	Confirm time.Duration
	// Logf reports trouble; nil means log.Printf.
	Logf func(format string, args ...any)
}

type seen struct {
	beat string
	at   time.Time
}

// Run watches the node table until ctx ends, then returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	confirm := m.Confirm
	if confirm <= 0 {
		confirm = 2 * DefaultInterval
	}
	poll := m.Poll
	if poll <= 0 {
		poll = max(timeout/10, 10*time.Millisecond)
		if m.Unreachable != nil {
			poll = max(min(poll, confirm/4), 10*time.Millisecond)
		}
	}
	logf := m.Logf
	if logf == nil {
		logf = log.Printf
	}
	last := map[string]seen{}
	var lastPoll time.Time // of the last successful read
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		stamps, err := m.Store.HeartbeatStamps(ctx)
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !lastPoll.IsZero() {
				logf("gray: monitor: cannot read heartbeats, retrying: %v", err)
			}
			lastPoll = time.Time{}
		} else {
			// After an outage, or when this loop itself was starved for
			// a while (a loaded machine), the silence was ours: every
			// node gets a fresh Timeout.
			grace := lastPoll.IsZero() || now.Sub(lastPoll) > timeout/2
			lastPoll = now
			for id, st := range stamps {
				if !st.Alive {
					delete(last, id)
					continue
				}
				if m.Watch != nil && !m.Watch(id) {
					continue
				}
				prev, known := last[id]
				if !known || grace || prev.beat != st.Beat {
					last[id] = seen{beat: st.Beat, at: now}
					continue
				}
				silent := now.Sub(prev.at)
				reason := fmt.Sprintf("no heartbeat for %v (timeout %v)", silent.Round(time.Millisecond), timeout)
				if silent <= timeout {
					since, gone := m.unreachable(id)
					if !gone || silent <= confirm {
						continue
					}
					reason = fmt.Sprintf("its connection was lost %v ago and no heartbeat came for %v", now.Sub(since).Round(time.Millisecond), silent.Round(time.Millisecond))
				}
				if m.OnSilent != nil {
					m.OnSilent(id, reason)
				}
				did, err := m.Store.DeclareSilent(ctx, id, prev.beat, reason)
				if err != nil {
					logf("gray: monitor: %v", err)
					continue
				}
				delete(last, id)
				if !did {
					continue
				}
				// Its objects went with it, whatever each job's driver
				// does (it may be dead too).
				if _, err := m.Store.ForgetNode(ctx, id); err != nil {
					logf("gray: monitor: %v", err)
				}
				if m.OnDeath != nil {
					m.OnDeath(id, reason, silent)
				}
			}
			for id := range last {
				if _, ok := stamps[id]; !ok {
					delete(last, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (m *Monitor) unreachable(id string) (time.Time, bool) {
	if m.Unreachable == nil {
		return time.Time{}, false
	}
	return m.Unreachable(id)
}
