package recovery

import (
	"fmt"
	"slices"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Event is one input of Step: the types below.
type Event interface{ event() }

// Stored: return ID of a task was stored (Err: it failed). Lineage is the
// task as submitted when the return is a function task's result in shared
// memory, else nil. Rebuilt: the task ran to rebuild its results.
// Effects: GiveUp when the rebuild failed too often; Claim when the
// result records its lineage.
type Stored struct {
	ID      ids.ObjectID
	Lineage *task.Spec
	Shared  bool
	Err     *task.TaskError
	Rebuilt bool
	At      time.Time
}

// Ended: task Task (ID) ended, its results stored or failed. Its run
// count and its rebuilding mark are forgotten. No effect.
type Ended[T comparable] struct {
	Task T
	ID   ids.TaskID
}

// Freed: object ID was deleted (Shared: it was in shared memory).
// Effects, for a shared object: Release for its lineage record's claims;
// on a cluster, Locate (no longer) and ReleaseCopies, now or at its last
// remote unpin.
type Freed struct {
	ID     ids.ObjectID
	Shared bool
}

// Missing: object ID was asked for and is not readable: evicted from the
// store, lost with its node, or its last rebuild failed. Effects:
// Replace with its loss when it has no lineage; else, unless its task
// is being rebuilt already, Discard for the returns whose last rebuild
// failed and Resubmit.
type Missing struct{ ID ids.ObjectID }

// TaskLost: the worker running Task died (Worker names it, Why says how
// it ended), or its node did (Worker "", Why says which and why). A
// worker on the driver's own machine (Local) died with its task, which
// is that task's failure, as a panic would be: Fail, naming Worker. A
// task on another node may have lost only its machine: Rerun, or Fail
// once it ran Limits.Runs times.
type TaskLost[T comparable] struct {
	Task   T
	Worker string
	Why    string
	Local  bool
}

// PullFailed: Task's worker could not pull argument ID (Why). Local: the
// driver's store holds ID. Effects, unless Task ran Limits.Runs times
// already (then none: its failure stands): the holder it pulled from
// dropped (see HolderGone), then Rerun with Refetch.
type PullFailed[T comparable] struct {
	Task  T
	ID    ids.ObjectID
	Why   string
	Local bool
}

// NodeAdded: node Node, named Name, joined the job.
type NodeAdded struct {
	Node NodeID
	Name string
}

// NodeGone: node Node died (Why). Its copies are gone; each object it
// held is dropped as by HolderGone. Effects: those of HolderGone, then
// ForgetNode.
type NodeGone struct {
	Node NodeID
	Why  string
}

// Held: node Node's store holds object ID. Effect: Locate.
type Held struct {
	ID   ids.ObjectID
	Node NodeID
}

// Sent: object ID was sent to node Node (released there with it).
type Sent struct {
	ID   ids.ObjectID
	Node NodeID
}

// HolderGone: node Node no longer holds object ID (Why); Gone: its
// process is known to be gone. Effects: Locate (no longer); Orphaned
// when no node holds it any more.
type HolderGone struct {
	ID   ids.ObjectID
	Node NodeID
	Why  string
	Gone bool
}

// Lost: object ID, which the driver's store lacks and no node holds, is
// lost (the shell's answer to Orphaned). An object with lineage is
// rebuilt when next asked for; one without gets its loss (Lose).
type Lost struct {
	ID   ids.ObjectID
	Why  string
	Gone bool
	At   time.Time
}

// Pinned: a task was sent object ID, which only other nodes hold: it is
// not released there until Unpinned.
type Pinned struct{ ID ids.ObjectID }

// Unpinned ends one Pinned. Effects: those of Freed, when the object was
// freed meanwhile and this was its last pin.
type Unpinned struct{ ID ids.ObjectID }

// StartFailed: a worker on node Node ended before connecting, as Err
// says (nil: it exited). Effects: StopSpawning (the driver's node) or
// DropNode (another), after Limits.BadStarts in a row, whose Message says
// how the last one ended.
type StartFailed struct {
	Node NodeID
	Err  error
}

// Connected: a worker on node Node connected; its node's count of bad
// starts (and the driver's) begins again.
type Connected struct{ Node NodeID }

func (Stored) event()        {}
func (Ended[T]) event()      {}
func (Freed) event()         {}
func (Missing) event()       {}
func (TaskLost[T]) event()   {}
func (PullFailed[T]) event() {}
func (NodeAdded) event()     {}
func (NodeGone) event()      {}
func (Held) event()          {}
func (Sent) event()          {}
func (HolderGone) event()    {}
func (Lost) event()          {}
func (Pinned) event()        {}
func (Unpinned) event()      {}
func (StartFailed) event()   {}
func (Connected) event()     {}

// Kind says what an Effect asks the shell to do.
type Kind uint8

// The effects.
const (
	// Claim takes a Lineage claim on each of Refs (objtable).
	Claim Kind = iota + 1
	// Release ends a Lineage claim on each of Refs.
	Release
	// GiveUp stores Err as return ID instead of the failed rebuild's
	// error, and reports it: the object is lost for good.
	GiveUp
	// Replace stores Object as ID in place of what is there, waking no
	// one (the asker reads it).
	Replace
	// Lose stores Object as ID in place of what is there and wakes who
	// waits for it.
	Lose
	// Discard deletes ID from the store: it is being rebuilt.
	Discard
	// Resubmit submits Spec (a copy of the lineage) again; the shell first
	// deletes the returns that were evicted.
	Resubmit
	// Rerun submits Task again (Refetch: its arguments claimed and
	// fetched again first).
	Rerun
	// Fail fails Task with ErrWorkerDied and Message (Worker: the worker
	// it ran on, when it died with it).
	Fail
	// Locate tells the location table that Node holds ID (Holds) or no
	// longer does.
	Locate
	// Orphaned asks the shell whether ID is lost: if the driver's store
	// lacks it and the store's entry is a shared value, it steps Lost.
	Orphaned
	// ReleaseCopies tells Nodes that ID was freed (and removes a copy one
	// of the driver's workers pulled).
	ReleaseCopies
	// StopSpawning: Count workers in a row ended before connecting (the
	// last: Message); start no more and fail what waits for one, with
	// NoWorkers.
	StopSpawning
	// DropNode takes Node out of the job (Message says why).
	DropNode
	// ForgetNode removes every entry of the location table for Node
	// (Name), which died: after every earlier write about it.
	ForgetNode
)

// Effect is one thing the shell must do, in the order given.
type Effect[T comparable] struct {
	Kind    Kind
	ID      ids.ObjectID
	Refs    []ids.ObjectID
	Spec    *task.Spec
	Task    T
	Node    NodeID
	Nodes   []NodeID
	Object  task.Object
	Err     *task.TaskError
	Message string
	Name    string
	Worker  string
	Holds   bool
	Gone    bool
	Refetch bool
	Count   int
}

// Step feeds the core one event; its effects wait in Effects.
func (c *Core[T]) Step(ev Event) {
	switch e := ev.(type) {
	case Stored:
		c.stored(e)
	case Ended[T]:
		delete(c.runs, e.Task)
		delete(c.rebuilding, e.ID)
	case Freed:
		delete(c.retry, e.ID)
		delete(c.fails, e.ID)
		if e.Shared {
			c.freed(e.ID)
		}
	case Missing:
		c.missing(e.ID)
	case TaskLost[T]:
		if e.Local {
			c.emit(Effect[T]{Kind: Fail, Task: e.Task, Worker: e.Worker, Message: "the worker process died while running it (" + e.Why + ")"})
			return
		}
		why := e.Why
		if e.Worker != "" {
			why = e.Worker + " died (" + e.Why + ")"
		}
		r := c.runs[e.Task] + 1
		if r > c.lim.Runs {
			delete(c.runs, e.Task)
			c.emit(Effect[T]{Kind: Fail, Task: e.Task, Message: fmt.Sprintf("tried %d times; the last time %s", r, why)})
			return
		}
		c.runs[e.Task] = r
		c.emit(Effect[T]{Kind: Rerun, Task: e.Task})
	case PullFailed[T]:
		r := c.runs[e.Task] + 1
		if r > c.lim.Runs {
			return
		}
		c.runs[e.Task] = r
		c.stats.Retried++
		if hs := c.holders[e.ID]; len(hs) > 0 && !e.Local {
			// The holder the worker was sent to (the first).
			c.holderGone(e.ID, hs[0], e.Why, false)
		}
		c.emit(Effect[T]{Kind: Rerun, Task: e.Task, Refetch: true})
	case NodeAdded:
		c.names[e.Node] = e.Name
	case NodeGone:
		c.nodeGone(e.Node, e.Why)
	case Held:
		if !slices.Contains(c.holders[e.ID], e.Node) {
			c.holders[e.ID] = append(c.holders[e.ID], e.Node)
			c.locate(e.ID, e.Node, true)
		}
	case Sent:
		if c.copies[e.ID] == nil {
			c.copies[e.ID] = map[NodeID]bool{}
		}
		c.copies[e.ID][e.Node] = true
	case HolderGone:
		c.holderGone(e.ID, e.Node, e.Why, e.Gone)
	case Lost:
		c.lost(e)
	case Pinned:
		c.rpins[e.ID]++
	case Unpinned:
		if c.rpins[e.ID]--; c.rpins[e.ID] > 0 {
			return
		}
		delete(c.rpins, e.ID)
		if c.unfreed[e.ID] {
			delete(c.unfreed, e.ID)
			c.releaseCopies(e.ID)
		}
	case StartFailed:
		c.startFailed(e)
	case Connected:
		c.badStarts = 0
		delete(c.nodeStarts, e.Node)
	default:
		panic("recovery: an event of a type Step does not know") // ev itself is not formatted: it would escape
	}
}

func (c *Core[T]) stored(e Stored) {
	id := e.ID
	if e.Rebuilt && c.lineage[id] != nil {
		switch {
		case e.Err == nil:
			// Made again at last.
			delete(c.fails, id)
			if _, ok := c.lostAt[id]; ok {
				delete(c.lostAt, id)
				c.stats.Rebuilt++
				c.stats.LastRebuilt = e.At
			}
		case NoRoom(e.Err):
			// The error answers who waits now; the next request rebuilds
			// it again, uncounted.
			c.retry[id] = true
			return
		default:
			c.fails[id]++
			if c.fails[id] < c.lim.Rebuilds {
				c.retry[id] = true
				return
			}
			delete(c.fails, id)
			c.emit(Effect[T]{Kind: GiveUp, ID: id, Err: gaveUp(id, c.lim.Rebuilds, e.Err)})
			return
		}
	}
	if !e.Shared || e.Err != nil || e.Lineage == nil || c.lineage[id] != nil {
		return
	}
	c.lineage[id] = e.Lineage
	if r := refs(e.Lineage); len(r) > 0 {
		c.emit(Effect[T]{Kind: Claim, ID: id, Refs: r})
	}
}

func (c *Core[T]) freed(id ids.ObjectID) {
	if c.cluster {
		delete(c.lostAt, id)
		if c.rpins[id] > 0 {
			c.unfreed[id] = true
		} else {
			c.releaseCopies(id)
		}
	}
	if s := c.lineage[id]; s != nil {
		delete(c.lineage, id)
		if r := refs(s); len(r) > 0 {
			c.emit(Effect[T]{Kind: Release, ID: id, Refs: r})
		}
	}
}

func (c *Core[T]) releaseCopies(id ids.ObjectID) {
	nodes := map[NodeID]bool{}
	for _, k := range c.holders[id] {
		nodes[k] = true
		c.locate(id, k, false)
	}
	for k := range c.copies[id] {
		nodes[k] = true
	}
	delete(c.holders, id)
	delete(c.copies, id)
	var to []NodeID
	for _, k := range sortedNodes(nodes) {
		if c.names[k] != "" {
			to = append(to, k)
		}
	}
	c.emit(Effect[T]{Kind: ReleaseCopies, ID: id, Nodes: to})
}

func (c *Core[T]) locate(id ids.ObjectID, k NodeID, holds bool) {
	if c.names[k] != "" {
		c.emit(Effect[T]{Kind: Locate, ID: id, Node: k, Holds: holds})
	}
}

func (c *Core[T]) missing(id ids.ObjectID) {
	spec := c.lineage[id]
	if spec == nil {
		c.emit(Effect[T]{Kind: Replace, ID: id, Object: EvictedLost(id)})
		return
	}
	if c.rebuilding[spec.ID] {
		return
	}
	c.rebuilding[spec.ID] = true
	for i := range spec.Returns() {
		if r := spec.Return(i); c.retry[r] {
			delete(c.retry, r)
			c.emit(Effect[T]{Kind: Discard, ID: r})
		}
	}
	again := *spec
	again.Args = append([]task.Arg(nil), spec.Args...)
	c.emit(Effect[T]{Kind: Resubmit, ID: id, Spec: &again})
}

func (c *Core[T]) holderGone(id ids.ObjectID, k NodeID, why string, gone bool) {
	hs := c.holders[id]
	for i, h := range hs {
		if h == k {
			hs = append(hs[:i:i], hs[i+1:]...)
			c.locate(id, k, false)
			break
		}
	}
	if len(hs) > 0 {
		c.holders[id] = hs
		return
	}
	delete(c.holders, id)
	// The node left the job (NodeGone) or nothing answers there: the
	// worker there that put the object, its owner, died with it.
	c.emit(Effect[T]{Kind: Orphaned, ID: id, Node: k, Message: why, Gone: gone || c.names[k] == ""})
}

func (c *Core[T]) lost(e Lost) {
	if _, counted := c.lostAt[e.ID]; counted {
		return
	}
	c.stats.Lost++
	if c.lineage[e.ID] != nil {
		c.lostAt[e.ID] = e.At // rebuilt when next asked for (Missing)
		return
	}
	reason, detail := task.ErrLostPut, "its only copy was on a node of the cluster: "+e.Why
	var cause error
	if e.ID.Index() < 1<<31 {
		reason = task.ErrLostActorMethod
	} else if e.Gone {
		cause = task.ErrLostOwnerDied
	}
	c.emit(Effect[T]{Kind: Lose, ID: e.ID, Object: task.Object{Shared: true, Err: task.Lost(e.ID, reason, detail, cause)}})
}

func (c *Core[T]) nodeGone(k NodeID, why string) {
	name := c.names[k]
	delete(c.names, k)
	delete(c.nodeStarts, k)
	for id, cs := range c.copies {
		delete(cs, k)
		if len(cs) == 0 {
			delete(c.copies, id)
		}
	}
	var held []ids.ObjectID
	for id, hs := range c.holders {
		if slices.Contains(hs, k) {
			held = append(held, id)
		}
	}
	slices.SortFunc(held, func(a, b ids.ObjectID) int { return slices.Compare(a[:], b[:]) })
	for _, id := range held {
		c.holderGone(id, k, fmt.Sprintf("node %s died (%s)", name, why), true)
	}
	if name != "" {
		c.emit(Effect[T]{Kind: ForgetNode, Node: k, Name: name})
	}
}

func (c *Core[T]) startFailed(e StartFailed) {
	if e.Node != 0 {
		why := "they exited"
		if e.Err != nil {
			why = e.Err.Error()
		}
		c.nodeStarts[e.Node]++
		if c.nodeStarts[e.Node] >= c.lim.BadStarts {
			c.emit(Effect[T]{Kind: DropNode, Node: e.Node,
				Message: fmt.Sprintf("%d workers in a row ended before connecting: %s", c.nodeStarts[e.Node], why)})
		}
		return
	}
	c.badStarts++
	if c.badStarts < c.lim.BadStarts || c.noSpawn {
		return
	}
	c.noSpawn = true
	why := "exited"
	if e.Err != nil {
		why = e.Err.Error()
	}
	c.emit(Effect[T]{Kind: StopSpawning, Count: c.badStarts, Message: why})
}
