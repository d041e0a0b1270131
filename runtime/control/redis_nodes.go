package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gray-ml/gray/runtime/machine"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/redis/go-redis/v9"
)

// NodeInfo is the node table's record of a node.
type NodeInfo struct {
	ID         string
	IP         string
	NodeAddr   string // where drivers lease workers (IP:PORT), "" if none
	ObjectAddr string // its transfer server (IP:PORT), "" if none
	Head       bool
	Resources  task.Resources // what it has in all
	Alive      bool
	Heartbeat  time.Time // its clock, at its last heartbeat
	Started    time.Time // when it registered
	Death      string    // why it was declared dead; "" while alive
	Load       NodeLoad  // as of its last heartbeat
}

// NodeLoad is what a node reports with each heartbeat.
type NodeLoad struct {
	Used                     task.Resources
	StoreUsed, StoreCapacity int64
	Tasks, Actors, Workers   int
	// ObjectsServed counts the bytes of objects the node's transfer
	// server has sent to other nodes and drivers.
	ObjectsServed int64
	// Waiting lists requests that no node that has joined can place yet.
	Waiting []task.Resources
	// Machine is the node's machine's CPU and memory use at its latest
	// sample (every MachineSampleEvery); nil from a node that sends none
	// (an older one). A new sample is also kept in the node's history
	// (NodeHistories).
	Machine *machine.Sample `json:",omitempty"`
}

// NodeEventKind says what happened to a node.
type NodeEventKind int

// The kinds of node events.
const (
	NodeJoined NodeEventKind = iota + 1
	NodeDied
)

// String returns "joined" or "died".
func (k NodeEventKind) String() string {
	switch k {
	case NodeJoined:
		return "joined"
	case NodeDied:
		return "died"
	}
	return "NodeEventKind(" + strconv.Itoa(int(k)) + ")"
}

// NodeEvent is a change of the node table that WatchNodes reports.
type NodeEvent struct {
	Kind   NodeEventKind
	Node   NodeInfo
	Reason string // why it died
}

// ErrUnknownNode is returned by Heartbeat when the node table does not
// hold the node (Redis lost it, e.g. restarted without its append-only
// file): the node should register again.
var ErrUnknownNode = errors.New("control: the node is not registered")

// ErrNodeDead is returned by Heartbeat when the node was declared dead:
// the cluster has given up its tasks and objects, so it must not carry on
// as if nothing happened.
var ErrNodeDead = errors.New("control: the node was declared dead")

// heartbeat is what a heartbeat writes.
type heartbeat struct {
	T    int64 // Unix milliseconds of the node's clock
	Load NodeLoad
}

// heartbeatScript writes a heartbeat only for a live, registered node:
// 0 = unknown node, 1 = written, 2 = the node is dead. A machine sample
// newer than the last one kept (ARGV[2], its time ARGV[3]) is appended to
// the node's history list KEYS[2], trimmed to ARGV[4] entries and expiring
// ARGV[5] ms after the last: the same round trip as the heartbeat.
var heartbeatScript = redis.NewScript(`
local a = redis.call('HGET', KEYS[1], 'alive')
if not a then return 0 end
if a == '0' then return 2 end
redis.call('HSET', KEYS[1], 'hb', ARGV[1])
if ARGV[2] ~= '' then
  local last = tonumber(redis.call('HGET', KEYS[1], 'mt') or '0')
  if tonumber(ARGV[3]) > last then
    redis.call('RPUSH', KEYS[2], ARGV[2])
    redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
    redis.call('PEXPIRE', KEYS[2], ARGV[5])
    redis.call('HSET', KEYS[1], 'mt', ARGV[3])
  end
end
return 1`)

// markDeadScript declares a live node dead and publishes the event once:
// 1 = it was alive, 0 = it was dead or unknown already, or its heartbeat
// is no longer ARGV[4] (when that is not empty).
var markDeadScript = redis.NewScript(`
local a = redis.call('HGET', KEYS[1], 'alive')
if a ~= '1' then return 0 end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'hb') ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'alive', '0', 'death', ARGV[1], 'died', ARGV[3])
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1`)

// RegisterNode adds a node to the node table as alive (again, if it was
// there) and announces it. A new process under the ID of an old one (see
// replaced) first takes the old one's entries out of the object-location
// tables.
func (r *Redis) RegisterNode(ctx context.Context, n NodeInfo) error {
	if n.ID == "" {
		return errors.New("control: a node needs an ID")
	}
	if n.Started.IsZero() {
		n.Started = time.Now()
	}
	n.Alive, n.Death = true, ""
	// A new process under the ID of an old one starts with an empty
	// store: what the location table lists on the old one is gone.
	if old, err := r.replaced(ctx, n); err != nil {
		return err
	} else if old {
		if _, err := r.ForgetNode(ctx, n.ID); err != nil {
			return err
		}
	}
	info, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("control: encoding node %s: %w", n.ID, err)
	}
	hb, _ := json.Marshal(heartbeat{T: time.Now().UnixMilli(), Load: n.Load})
	ev, _ := json.Marshal(wireEvent{Kind: NodeJoined, ID: n.ID})
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, keyNodes, n.ID)
		p.HSet(ctx, nodeKey(n.ID), "info", info, "alive", "1", "death", "", "hb", hb)
		p.HDel(ctx, nodeKey(n.ID), "died")
		p.Publish(ctx, chanNodes, ev)
		return nil
	})
	if err != nil {
		return fmt.Errorf("control: registering node %s: %w", n.ID, err)
	}
	return nil
}

// Heartbeat records that a node is alive, with its load: one command. It
// returns ErrUnknownNode when the node should register again and
// ErrNodeDead when it was declared dead.
func (r *Redis) Heartbeat(ctx context.Context, id string, load NodeLoad) error {
	hb, err := json.Marshal(heartbeat{T: time.Now().UnixMilli(), Load: load})
	if err != nil {
		return fmt.Errorf("control: encoding the heartbeat of node %s: %w", id, err)
	}
	smp, t := historyArgs(load.Machine)
	res, err := heartbeatScript.Run(ctx, r.c, []string{nodeKey(id), nodeHistoryKey(id)}, hb, smp, t, machineHistoryLen, MachineHistorySpan.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("control: heartbeat of node %s: %w", id, err)
	}
	switch res {
	case 0:
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	case 2:
		return fmt.Errorf("%w: %s", ErrNodeDead, id)
	}
	return nil
}

// MarkDead declares a node dead, recording why, and announces it; a node
// dead already (or unknown) is left as it is. A node it declares dead (a
// node stopping: its store goes with it) leaves the object-location tables
// (ForgetNode).
func (r *Redis) MarkDead(ctx context.Context, id, reason string) error {
	did, err := r.DeclareDead(ctx, id, reason)
	if err != nil || !did {
		return err
	}
	_, err = r.ForgetNode(ctx, id)
	return err
}

// DeclareDead is MarkDead that also reports whether this call did it
// (false: the node was dead already, or is unknown), so that of two
// monitors only one announces a death.
func (r *Redis) DeclareDead(ctx context.Context, id, reason string) (bool, error) {
	return r.DeclareSilent(ctx, id, "", reason)
}

// DeclareSilent is DeclareDead for a node whose last heartbeat was beat
// (a Stamp's Beat): it does nothing (false) if the node has beaten since,
// e.g. a head started again under the same ID between a monitor's read
// and its verdict. An empty beat declares it dead whatever its heartbeat.
func (r *Redis) DeclareSilent(ctx context.Context, id, beat, reason string) (bool, error) {
	ev, _ := json.Marshal(wireEvent{Kind: NodeDied, ID: id, Reason: reason})
	res, err := markDeadScript.Run(ctx, r.c, []string{nodeKey(id), chanNodes}, reason, ev, time.Now().UnixMilli(), beat).Int()
	if err != nil {
		return false, fmt.Errorf("control: marking node %s dead: %w", id, err)
	}
	return res == 1, nil
}

// Node reads one node's record; ok is false when the table does not hold
// it.
func (r *Redis) Node(ctx context.Context, id string) (n NodeInfo, ok bool, err error) {
	m, err := r.c.HGetAll(ctx, nodeKey(id)).Result()
	if err != nil {
		return NodeInfo{}, false, fmt.Errorf("control: reading node %s: %w", id, err)
	}
	return decodeNode(m)
}

// HeartbeatStamps returns each registered node's last heartbeat as Redis
// holds it (opaque; it changes with every heartbeat) and whether the node
// is alive. A monitor compares stamps between polls.
func (r *Redis) HeartbeatStamps(ctx context.Context) (map[string]Stamp, error) {
	idsList, err := r.c.SMembers(ctx, keyNodes).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the node table: %w", err)
	}
	p := r.c.Pipeline()
	cmds := make([]*redis.SliceCmd, len(idsList))
	for i, id := range idsList {
		cmds[i] = p.HMGet(ctx, nodeKey(id), "hb", "alive")
	}
	if len(idsList) > 0 {
		if _, err := p.Exec(ctx); err != nil {
			return nil, fmt.Errorf("control: reading heartbeats: %w", err)
		}
	}
	out := make(map[string]Stamp, len(idsList))
	for i, id := range idsList {
		v := cmds[i].Val()
		if len(v) != 2 || v[1] == nil {
			continue
		}
		hb, _ := v[0].(string)
		alive, _ := v[1].(string)
		out[id] = Stamp{Beat: hb, Alive: alive == "1"}
	}
	return out, nil
}

// Stamp is a node's last heartbeat, as HeartbeatStamps reads it.
type Stamp struct {
	Beat  string // changes with every heartbeat
	Alive bool
}

// Nodes lists the node table, alive and dead, sorted by start time.
func (r *Redis) Nodes(ctx context.Context) ([]NodeInfo, error) {
	idsList, err := r.c.SMembers(ctx, keyNodes).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the node table: %w", err)
	}
	p := r.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(idsList))
	for i, id := range idsList {
		cmds[i] = p.HGetAll(ctx, nodeKey(id))
	}
	if len(idsList) > 0 {
		if _, err := p.Exec(ctx); err != nil {
			return nil, fmt.Errorf("control: reading the node table: %w", err)
		}
	}
	out := make([]NodeInfo, 0, len(idsList))
	for _, c := range cmds {
		n, ok, err := decodeNode(c.Val())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func decodeNode(m map[string]string) (NodeInfo, bool, error) {
	info, ok := m["info"]
	if !ok {
		return NodeInfo{}, false, nil
	}
	var n NodeInfo
	if err := json.Unmarshal([]byte(info), &n); err != nil {
		return NodeInfo{}, false, fmt.Errorf("control: a node record is corrupt: %w", err)
	}
	n.Alive = m["alive"] == "1"
	n.Death = m["death"]
	var hb heartbeat
	if json.Unmarshal([]byte(m["hb"]), &hb) == nil {
		n.Heartbeat = time.UnixMilli(hb.T)
		n.Load = hb.Load
	}
	if !n.Alive {
		// A dead node holds nothing: its last heartbeat's workers, grants
		// and objects went with it (gray status and list must not show
		// them as held). Its store's size and last sample stay facts.
		n.Load = NodeLoad{StoreCapacity: n.Load.StoreCapacity, Machine: n.Load.Machine}
	}
	return n, true, nil
}

// wireEvent is what the node-events channel carries. Watchers take it as
// a hint and read the table, so a lost message costs only latency.
type wireEvent struct {
	Kind   NodeEventKind
	ID     string
	Reason string
}

// watchResync is how often WatchNodes rereads the node table whatever the
// channel says, which covers messages lost while Redis restarted.
const watchResync = time.Second

// WatchNodes reports changes of the node table: first a NodeJoined event
// for each node alive now, then joins and deaths as they happen. It
// follows Redis's node-events channel and rereads the table every second,
// so events published while Redis restarted are not lost. The channel is
// closed when ctx ends.
func (r *Redis) WatchNodes(ctx context.Context) (<-chan NodeEvent, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	ps := r.c.Subscribe(ctx, chanNodes)
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		ps.Close()
		return nil, fmt.Errorf("control: subscribing to node events: %w", err)
	}
	out := make(chan NodeEvent, 64)
	alive := map[string]bool{}
	emit := func(nodes []NodeInfo) bool {
		for _, n := range nodes {
			was, known := alive[n.ID]
			alive[n.ID] = n.Alive
			var ev NodeEvent
			switch {
			case n.Alive && (!known || !was):
				ev = NodeEvent{Kind: NodeJoined, Node: n}
			case !n.Alive && known && was:
				ev = NodeEvent{Kind: NodeDied, Node: n, Reason: n.Death}
			default:
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	go func() {
		defer close(out)
		defer ps.Close()
		if !emit(nodes) {
			return
		}
		msgs := ps.Channel()
		tick := time.NewTicker(watchResync)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
			case <-tick.C:
			}
			nodes, err := r.Nodes(ctx)
			if err != nil {
				continue // Redis is away: the ticker tries again
			}
			if !emit(nodes) {
				return
			}
		}
	}()
	return out, nil
}
