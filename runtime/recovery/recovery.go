// Package recovery is the driver's core for what it does when something is
// lost: a result evicted from the object store or lost with a node of the
// cluster is rebuilt from its lineage (the task that made it, run again),
// a rebuild that keeps failing gives the object up, a task whose worker or
// node died runs again elsewhere a bounded number of times, and workers
// that never connect stop the driver (or the node) from starting more.
// On a cluster it also keeps which nodes hold which objects, which nodes
// were sent copies, and which objects running tasks may still pull.
//
// Like runtime/sched and runtime/objtable it is a plain state machine: no
// clock, no goroutine, no I/O. The shell (runtime/node) feeds it events
// with Step, one at a time, and carries out the effects Step leaves
// (Effects), in order. Time comes in events (Lost.At, Stored.At). Facts
// only the shell knows (is the object in the driver's store? does the
// store entry say it is shared?) come in events too, or the core asks the
// shell to look (Orphaned) and the shell answers with the next event.
// Read-only queries (Lineage, Retry, Holders...) never change the state.
//
// The tests (recovery_test.go) drive it with tables of events and compare
// the effects, as etcd's raft interaction tests do: every decision is
// tested without a process.
package recovery

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// NodeID names a node of the cluster (sched.Local, 0, is the driver's
// own).
type NodeID = sched.NodeID

// Limits bound the retries. Zero fields take the defaults below.
type Limits struct {
	// Rebuilds is how many times in a row rebuilding an object from its
	// lineage may fail (its task failed, or its worker died) before the
	// object is lost for good. A rebuild that failed for want of room in
	// the object store does not count: it is retried once there is room.
	Rebuilds int
	// Runs is how often a task whose remote worker or node died, or whose
	// worker could not pull an argument, runs again.
	Runs int
	// BadStarts is how many workers in a row may end before connecting
	// before the driver stops starting workers (its own node) or drops
	// the node (another node).
	BadStarts int
	// Cluster: the driver's objects may live on other nodes (Freed then
	// releases their copies there).
	Cluster bool
}

// The defaults of Limits.
const (
	DefaultRebuilds  = 3
	DefaultRuns      = 3
	DefaultBadStarts = 3
)

// Stats counts objects lost with their node and rebuilt.
type Stats struct {
	Lost        int       // objects lost with their node (or a failed pull)
	Rebuilt     int       // of those, rebuilt from lineage
	LastRebuilt time.Time // when the last lost object was rebuilt
	Retried     int       // tasks run again because a worker could not pull an argument
}

// Core is the recovery state of one driver. T is the shell's task (only
// compared, never looked into). Not safe for concurrent use.
type Core[T comparable] struct {
	lim Limits

	lineage    map[ids.ObjectID]*task.Spec // results in shared memory -> the task that rebuilds them
	rebuilding map[ids.TaskID]bool         // tasks run again to rebuild their results
	retry      map[ids.ObjectID]bool       // results whose rebuild failed: rebuilt again when next asked for
	fails      map[ids.ObjectID]int        // failed rebuilds in a row, per object
	runs       map[T]int                   // tasks run again until they end

	badStarts  int
	noSpawn    bool
	nodeStarts map[NodeID]int
	names      map[NodeID]string
	holders    map[ids.ObjectID][]NodeID        // other nodes whose store holds the object
	copies     map[ids.ObjectID]map[NodeID]bool // nodes it was sent to (released with it)
	rpins      map[ids.ObjectID]int             // tasks sent an object the driver's store lacks
	unfreed    map[ids.ObjectID]bool            // freed while remote-pinned: released at the last unpin
	lostAt     map[ids.ObjectID]time.Time       // lost objects not rebuilt yet
	stats      Stats
	cluster    bool
	effects    []Effect[T]
}

// New returns an empty core.
func New[T comparable](lim Limits) *Core[T] {
	if lim.Rebuilds <= 0 {
		lim.Rebuilds = DefaultRebuilds
	}
	if lim.Runs <= 0 {
		lim.Runs = DefaultRuns
	}
	if lim.BadStarts <= 0 {
		lim.BadStarts = DefaultBadStarts
	}
	return &Core[T]{
		lim: lim, cluster: lim.Cluster, lineage: map[ids.ObjectID]*task.Spec{}, rebuilding: map[ids.TaskID]bool{},
		retry: map[ids.ObjectID]bool{}, fails: map[ids.ObjectID]int{}, runs: map[T]int{},
		nodeStarts: map[NodeID]int{}, names: map[NodeID]string{},
		holders: map[ids.ObjectID][]NodeID{}, copies: map[ids.ObjectID]map[NodeID]bool{},
		rpins: map[ids.ObjectID]int{}, unfreed: map[ids.ObjectID]bool{}, lostAt: map[ids.ObjectID]time.Time{},
	}
}

// Effects returns the effects of the events stepped since the last call,
// in order, and forgets them.
func (c *Core[T]) Effects() []Effect[T] {
	e := c.effects
	c.effects = nil
	return e
}

func (c *Core[T]) emit(e Effect[T]) { c.effects = append(c.effects, e) }

// Lineage returns the task that rebuilds object id, or nil.
func (c *Core[T]) Lineage(id ids.ObjectID) *task.Spec { return c.lineage[id] }

// Rebuilding reports whether task id runs to rebuild its results.
func (c *Core[T]) Rebuilding(id ids.TaskID) bool { return c.rebuilding[id] }

// Retry reports whether object id's last rebuild failed: it is rebuilt
// again when next asked for.
func (c *Core[T]) Retry(id ids.ObjectID) bool { return c.retry[id] }

// Runs returns how often task t was run again.
func (c *Core[T]) Runs(t T) int { return c.runs[t] }

// RunsKept returns how many tasks have a run count.
func (c *Core[T]) RunsKept() int { return len(c.runs) }

// SpawnFailed reports whether the driver stopped starting workers.
func (c *Core[T]) SpawnFailed() bool { return c.noSpawn }

// Name returns the name of node k ("" once gone or before it was added).
func (c *Core[T]) Name(k NodeID) string { return c.names[k] }

// Holders returns the other nodes whose store holds object id, in the
// order they were recorded (the first is where workers pull from).
func (c *Core[T]) Holders(id ids.ObjectID) []NodeID { return c.holders[id] }

// HasRemote reports whether another node holds object id.
func (c *Core[T]) HasRemote(id ids.ObjectID) bool { return len(c.holders[id]) > 0 }

// RemotePins returns the remote pins of object id.
func (c *Core[T]) RemotePins(id ids.ObjectID) int { return c.rpins[id] }

// Remote returns how many objects other nodes hold.
func (c *Core[T]) Remote() int { return len(c.holders) }

// Stats returns the counts of objects lost and rebuilt.
func (c *Core[T]) Stats() Stats { return c.stats }

// Check reports state kept for a task that ended (live says which tasks
// are queued, sent or waiting): its count leaked.
func (c *Core[T]) Check(live func(T) bool, name func(T) string) error {
	for t := range c.runs {
		if !live(t) {
			return fmt.Errorf("task %s ended but its run count is still kept", name(t))
		}
	}
	for id, n := range c.rpins {
		if n <= 0 {
			return fmt.Errorf("object %s has %d remote pins", id, n)
		}
	}
	return nil
}

// refs returns the reference arguments of s.
func refs(s *task.Spec) []ids.ObjectID {
	var r []ids.ObjectID
	for _, a := range s.Args {
		if a.IsRef {
			r = append(r, a.Ref)
		}
	}
	return r
}

// NoRoom reports whether err is the store lacking room, which a later
// rebuild may not meet. A worker's reservation failure crosses as text.
func NoRoom(err error) bool {
	return err != nil && (errors.Is(err, objstore.ErrFull) || errors.Is(err, objstore.ErrTooLarge) ||
		strings.Contains(err.Error(), objstore.ErrFull.Error()))
}

// EvictedLost is the value of an evicted object that has no lineage.
func EvictedLost(id ids.ObjectID) task.Object {
	reason, detail := task.ErrLostPut, "raise Options.ObjectStoreMemory or keep fewer large objects alive"
	if id.Index() < 1<<31 { // a return value, not a Put: of an actor method
		reason = task.ErrLostActorMethod
		detail = "have the actor keep the value, or " + detail
	}
	return task.Object{Shared: true, Err: task.Lost(id, reason, "it was evicted from the object store; "+detail, objstore.ErrEvicted)}
}

// gaveUp is the loss of object id after lim failed rebuilds, the last
// with err.
func gaveUp(id ids.ObjectID, lim int, err *task.TaskError) *task.TaskError {
	return task.Lost(id, task.ErrLostRetriesExhausted,
		"its task failed each of the last "+strconv.Itoa(lim)+" times it was re-run: "+task.FirstLine(err.Error()), err)
}

// sortedNodes returns the keys of set in order (effects come out in a
// fixed order, so tables can compare them).
func sortedNodes(set map[NodeID]bool) []NodeID {
	ks := make([]NodeID, 0, len(set))
	for k := range set {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
