// Package objtable is the node's object-lifetime table: who holds which
// object and why, in one claim/release vocabulary keyed by IDs.
//
// An object lives while anything can still ask for it. Its first reference
// (the Ref the driver or a worker got back) is its owner; Drop ends it. On
// top of that, claims of several kinds keep it:
//
//   - TaskArg: a task not yet sent to a worker takes it as an argument;
//   - ActorKeep: an actor reads it in place for its lifetime (gray.Shared),
//     held by that actor;
//   - Lineage: it is an argument of a task that can rebuild a lost or
//     evicted result: held by the task from its submission until it ends,
//     then by each result's lineage record until that result is deleted;
//   - Contained: the value of another object (the holder) refers to it;
//   - Hold: a process decoded a reference to it out of a value; each hold
//     is matched by one more Drop. A worker's holds are kept by worker, so
//     that those of a worker that dies are dropped for it.
//
// Store pins are claims too, of kinds of their own: they keep a shared-memory
// object's pages from eviction and reuse, not its entry, so they never keep
// an object from being freed (the store frees the pages at the last unpin).
// Each stands for one objstore pin the node took:
//
//   - ArgPin: a task's argument, held by the task (TaskHolder) until it
//     ends, so its worker can map it;
//   - ReadPin: an object a worker's running task got with Get, held by the
//     worker until the task ends or the worker dies;
//   - DriverPin: an object the driver's Get mapped, held by the driver
//     (Holder{}), at most one per object, until the object is freed;
//   - ActorKeep (above) is a claim and a pin at once.
//
// The table says when an object may be freed: its owner dropped it and no
// claim remains. It does no I/O and frees nothing itself; the node deletes
// the object when a call reports it free. Check verifies the invariants
// (no negative counts, nothing released or unpinned that was not held, no
// claim or pin by a holder that is gone) and tests call it after every
// step; CheckPins verifies that the store holds every pin the table records,
// so nothing pinned can be evicted. The table is not safe for concurrent use.
package objtable

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
)

// Kind is why a claim holds an object.
type Kind uint8

// The kinds of claims.
const (
	TaskArg Kind = iota
	ActorKeep
	Lineage
	Contained
	Hold
	ArgPin
	ReadPin
	DriverPin
	numKinds
)

// Pin reports whether k is a store pin (ActorKeep is one besides a claim).
func (k Kind) Pin() bool { return k >= ArgPin || k == ActorKeep }

// keeps reports whether a claim of kind k keeps the object from being freed.
func (k Kind) keeps() bool { return k < ArgPin }

// String names the claim kind, for errors and test failures.
func (k Kind) String() string {
	switch k {
	case TaskArg:
		return "task-arg"
	case ActorKeep:
		return "actor-keep"
	case Lineage:
		return "lineage"
	case Contained:
		return "contained"
	case Hold:
		return "hold"
	case ArgPin:
		return "arg-pin"
	case ReadPin:
		return "read-pin"
	case DriverPin:
		return "driver-pin"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// HolderKind says what a Holder is.
type HolderKind uint8

// The kinds of holders.
const (
	Anyone HolderKind = iota // no identity: the driver, or a queued task
	Worker                   // a worker process, by its number
	Actor                    // an actor, by its ID
	Object                   // an object, by its ID (for Contained)
	Task                     // a task, by its ID (for ArgPin)
)

// Holder names who holds a claim, when the claim must end with it.
type Holder struct {
	Kind HolderKind
	ID   [20]byte
}

// WorkerHolder names worker process n.
func WorkerHolder(n int) Holder {
	h := Holder{Kind: Worker}
	for i := range 8 {
		h.ID[i] = byte(uint64(n) >> (8 * i))
	}
	return h
}

// ActorHolder names actor a.
func ActorHolder(a ids.ActorID) Holder {
	h := Holder{Kind: Actor}
	copy(h.ID[:], a[:])
	return h
}

// TaskHolder names task t, as the holder of its arguments' pins.
func TaskHolder(t ids.TaskID) Holder {
	h := Holder{Kind: Task}
	copy(h.ID[:], t[:])
	return h
}

// ObjectHolder names object o, as the container of others.
func ObjectHolder(o ids.ObjectID) Holder { return Holder{Kind: Object, ID: o} }

type entry struct {
	n       [numKinds]int32
	dropped bool // the owner dropped it: freed once no claim remains
}

// claimed reports whether a claim keeps the object (pins do not).
func (e *entry) claimed() bool {
	for k, c := range e.n {
		if c != 0 && Kind(k).keeps() {
			return true
		}
	}
	return false
}

// pins returns the store pins the entry records.
func (e *entry) pins() int {
	n := 0
	for k, c := range e.n {
		if Kind(k).Pin() {
			n += int(c)
		}
	}
	return n
}

// held reports whether the entry records any claim or pin.
func (e *entry) held() bool {
	for _, c := range e.n {
		if c != 0 {
			return true
		}
	}
	return false
}

type claim struct {
	kind Kind
	id   ids.ObjectID
}

// Table is the object-lifetime table.
type Table struct {
	objs map[ids.ObjectID]*entry
	by   map[Holder]map[claim]int32 // claims with a holder
	bad  error                      // the first release without a claim
}

// New returns an empty table.
func New() *Table {
	return &Table{objs: map[ids.ObjectID]*entry{}, by: map[Holder]map[claim]int32{}}
}

func (t *Table) get(id ids.ObjectID) *entry {
	e := t.objs[id]
	if e == nil {
		e = &entry{}
		t.objs[id] = e
	}
	return e
}

// tidy forgets id's entry once it records nothing.
func (t *Table) tidy(id ids.ObjectID, e *entry) {
	if !e.dropped && !e.held() {
		delete(t.objs, id)
	}
}

// Claim adds a claim of kind k on id, held by h (Holder{} for anyone).
func (t *Table) Claim(h Holder, id ids.ObjectID, k Kind) {
	t.get(id).n[k]++
	if h.Kind != Anyone {
		m := t.by[h]
		if m == nil {
			m = map[claim]int32{}
			t.by[h] = m
		}
		m[claim{k, id}]++
	}
}

// Release ends a claim of kind k on id held by h. It reports whether the
// object is to be freed now: its owner dropped it and no claim remains (never
// for a pin, which does not keep the object). Releasing a claim that does
// not exist (unpinning twice, say) changes nothing and is reported by Check.
func (t *Table) Release(h Holder, id ids.ObjectID, k Kind) (free bool) {
	e := t.objs[id]
	if e == nil || e.n[k] == 0 {
		if t.bad == nil {
			t.bad = fmt.Errorf("object %s: %s claim released by %v, but none is held", id, k, h)
		}
		return false
	}
	if h.Kind != Anyone && !t.unrecord(h, claim{k, id}) {
		if t.bad == nil {
			t.bad = fmt.Errorf("object %s: %s claim released by %v, which holds none", id, k, h)
		}
		return false
	}
	e.n[k]--
	free = k.keeps() && e.dropped && !e.claimed()
	t.tidy(id, e)
	return free
}

func (t *Table) unrecord(h Holder, c claim) bool {
	m := t.by[h]
	switch m[c] {
	case 0:
		return false
	case 1:
		delete(m, c)
		if len(m) == 0 {
			delete(t.by, h)
		}
	default:
		m[c]--
	}
	return true
}

// Holds reports whether h holds a claim of kind k on id.
func (t *Table) Holds(h Holder, id ids.ObjectID, k Kind) bool { return t.by[h][claim{k, id}] > 0 }

// Count returns the claims h holds.
func (t *Table) Count(h Holder) int {
	n := 0
	for _, c := range t.by[h] {
		n += int(c)
	}
	return n
}

// ReleaseHolder ends every claim h holds (a worker died, an actor ended,
// a container was deleted). It returns the objects its claims were on,
// once per claim; the caller frees those now free (see Free) and unpins
// pins. Hold claims are returned without being ended: each stands for a
// Drop the holder owes, which the caller makes for it.
func (t *Table) ReleaseHolder(h Holder) []ids.ObjectID { return t.release(h, nil) }

// ReleaseKind is ReleaseHolder for h's claims of kind k only (a task's
// argument pins when it ends, a worker's read pins, a dead worker's holds).
func (t *Table) ReleaseKind(h Holder, k Kind) []ids.ObjectID { return t.release(h, &k) }

func (t *Table) release(h Holder, only *Kind) []ids.ObjectID {
	m := t.by[h]
	if len(m) == 0 {
		return nil
	}
	var out []ids.ObjectID
	for c, n := range m {
		if only != nil && c.kind != *only {
			continue
		}
		delete(m, c)
		e := t.objs[c.id]
		for range n {
			out = append(out, c.id)
			if c.kind != Hold && e != nil && e.n[c.kind] > 0 {
				e.n[c.kind]--
			}
		}
		if e != nil {
			t.tidy(c.id, e)
		}
	}
	if len(m) == 0 {
		delete(t.by, h)
	}
	return out
}

// Drop is one drop of a reference to id by h (a worker, or the driver as
// Holder{}): it ends one hold if any remains, h's own first, else the
// owner's reference. It reports whether the object is to be freed now.
func (t *Table) Drop(h Holder, id ids.ObjectID) (free bool) {
	if h.Kind != Anyone {
		t.unrecord(h, claim{Hold, id})
	}
	e := t.get(id)
	if e.n[Hold] > 0 {
		e.n[Hold]--
		free = e.dropped && !e.claimed()
		t.tidy(id, e)
		return free
	}
	e.dropped = true
	return !e.claimed()
}

// MarkDropped records that the owner is gone without counting a drop
// (gray.Free, a deletion deferred until the object arrives). It reports
// whether no claim remains.
func (t *Table) MarkDropped(id ids.ObjectID) (free bool) {
	e := t.get(id)
	e.dropped = true
	return !e.claimed()
}

// Dropped reports whether the owner of id is gone.
func (t *Table) Dropped(id ids.ObjectID) bool {
	e := t.objs[id]
	return e != nil && e.dropped
}

// Claimed reports whether any claim holds id.
func (t *Table) Claimed(id ids.ObjectID) bool {
	e := t.objs[id]
	return e != nil && e.claimed()
}

// Claims returns the claims of kind k on id.
func (t *Table) Claims(id ids.ObjectID, k Kind) int {
	if e := t.objs[id]; e != nil {
		return int(e.n[k])
	}
	return 0
}

// Pins returns the store pins recorded on id, of every pin kind.
func (t *Table) Pins(id ids.ObjectID) int {
	if e := t.objs[id]; e != nil {
		return e.pins()
	}
	return 0
}

// Forget removes id's entry once the object is deleted; claims still held
// on it stay (a rebuilt object is claimed again), the dropped mark goes.
func (t *Table) Forget(id ids.ObjectID) {
	if e := t.objs[id]; e != nil {
		e.dropped = false
		t.tidy(id, e)
	}
}

// Len returns how many objects the table records.
func (t *Table) Len() int { return len(t.objs) }

// Check verifies the table's invariants: no negative count, no release
// without a claim, every holder's claims counted in its objects, and no
// claim held by a holder alive reports gone (nil: every holder alive).
func (t *Table) Check(alive func(Holder) bool) error {
	var errs []error
	if t.bad != nil {
		errs = append(errs, t.bad)
	}
	var sum map[claim]int32
	for h, m := range t.by {
		if alive != nil && !alive(h) {
			errs = append(errs, fmt.Errorf("%v is gone but holds %d claims", h, len(m)))
		}
		for c, n := range m {
			if n <= 0 {
				errs = append(errs, fmt.Errorf("%v holds %d %s claims on %s", h, n, c.kind, c.id))
			}
			if sum == nil {
				sum = map[claim]int32{}
			}
			sum[c] += n
		}
	}
	for id, e := range t.objs {
		for k, c := range e.n {
			if c < 0 {
				errs = append(errs, fmt.Errorf("object %s: %d %s claims", id, c, Kind(k)))
			}
		}
	}
	for c, n := range sum {
		e := t.objs[c.id]
		if c.kind != Hold && (e == nil || e.n[c.kind] < n) {
			errs = append(errs, fmt.Errorf("object %s: holders have %d %s claims, the object counts fewer", c.id, n, c.kind))
		}
	}
	return errors.Join(errs...)
}

// CheckPins verifies that the store holds at least the pins the table
// records on each object (storePins answers for the store), so that nothing
// pinned can be evicted or its pages reused.
func (t *Table) CheckPins(storePins func(ids.ObjectID) int) error {
	var errs []error
	for id, e := range t.objs {
		if n := e.pins(); n > 0 {
			if got := storePins(id); got < n {
				errs = append(errs, fmt.Errorf("object %s: %d pins recorded, the store holds %d", id, n, got))
			}
		}
	}
	return errors.Join(errs...)
}

// String names the holder.
func (h Holder) String() string {
	switch h.Kind {
	case Worker:
		n := 0
		for i := range 8 {
			n |= int(h.ID[i]) << (8 * i)
		}
		return fmt.Sprintf("worker %d", n)
	case Actor:
		var a ids.ActorID
		copy(a[:], h.ID[:])
		return "actor " + a.String()
	case Object:
		return "object " + ids.ObjectID(h.ID).String()
	case Task:
		var tid ids.TaskID
		copy(tid[:], h.ID[:])
		return "task " + tid.String()
	}
	return "anyone"
}
