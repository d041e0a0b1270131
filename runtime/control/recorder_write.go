package control

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/redis/go-redis/v9"
)

// The job-scoped tables a Recorder writes (see docs/cluster.md):
//
//	gray:job:<job>:tasks         hash, three fields per task:
//	                             <id>.s "kind|submitted ms|actor|function"
//	                             <id>.r "started ms|node"
//	                             <id>.e "state|ended ms|message"
//	gray:job:<job>:tasks-ended   sorted set: ended task IDs by end time
//	gray:job:<job>:actors        hash: actor ID -> JSON (actorRow)
//	gray:job:<job>:actors-ended  sorted set: dead actor IDs by death time
//	gray:job:<job>:errors        list of JSON failures, the newest kept
//	gray:job:<job>:state         hash: submitted, finished, failed,
//	                             dropped, evicted
//
// A task's fields are written separately so that each event is one field
// set and the writer keeps nothing per queued task.
const (
	fieldSpec  = ".s"
	fieldRun   = ".r"
	fieldEnd   = ".e"
	tablesSep  = "|"
	stateField = "state"
)

// actorRow is how the actor table stores an actor. Its first three keys
// are ActorRecord's, so Redis.Actor reads rows a Recorder wrote.
type actorRow struct {
	Type, Worker, Death string
	Node                string
	Restarts            int
	Created, Ended      int64 // Unix milliseconds; Ended 0 while it lives
}

// actorInfo is what the writer learns of an actor beyond its ActorRecord.
type actorInfo struct {
	node           string
	restarts       int
	placed         bool
	created, ended int64
}

// recordWriter is the Recorder's writer goroutine's state.
type recordWriter struct {
	rc *Recorder
	// The task entries in the table, oldest first (a ring of max), for
	// the cap on entries per job.
	max    int
	ring   []ids.TaskID
	head   int
	listed map[ids.TaskID]struct{}
	actors map[ids.ActorID]*actorInfo

	evicted atomic.Uint64
	idle    atomic.Bool
}

func (w *recordWriter) init(rc *Recorder, max int) {
	w.rc, w.max = rc, max
	w.listed = map[ids.TaskID]struct{}{}
	w.actors = map[ids.ActorID]*actorInfo{}
}

// recordCmds is one batch's writes, built once so that a retry after an
// outage sends the same.
type recordCmds struct {
	tasks      []any // field, value, ...
	ended      []redis.Z
	evictF     []string
	evictIDs   []any
	actors     []any
	actorsGone []redis.Z
	errs       []any
	counts     []any
}

// build turns a batch of events into writes.
func (w *recordWriter) build(batch []event, dropped uint64) *recordCmds {
	c := &recordCmds{}
	dirty := map[ids.ActorID]bool{}
	var b []byte
	for i := range batch {
		e := &batch[i]
		id := e.id.String() // every event buffered is written: the Recorder skips unrecorded tasks
		switch e.kind {
		case evSubmitted:
			w.list(e.id, c)
			b = strconv.AppendUint(b[:0], uint64(e.tkind), 10)
			b = append(b, tablesSep...)
			b = strconv.AppendInt(b, e.t, 10)
			b = append(b, tablesSep...)
			if e.tkind == task.KindActorMethod {
				b = append(b, e.actor.String()...)
			}
			b = append(b, tablesSep...)
			b = append(b, e.name...)
			c.tasks = append(c.tasks, id+fieldSpec, string(b))
		case evStarted:
			node := e.name
			if node == "" {
				node = w.rc.node
			}
			if a := w.actors[e.id]; a != nil { // an actor's constructor: where it lives
				a.node = node
				dirty[e.id] = true
			}
			if _, ok := w.listed[e.id]; ok {
				b = strconv.AppendInt(b[:0], e.t, 10)
				b = append(b, tablesSep...)
				b = append(b, node...)
				c.tasks = append(c.tasks, id+fieldRun, string(b))
			}
		case evFinished, evFailed:
			if _, ok := w.listed[e.id]; !ok {
				continue
			}
			state := "finished"
			if e.kind == evFailed {
				state = "failed"
			}
			b = append(b[:0], state...)
			b = append(b, tablesSep...)
			b = strconv.AppendInt(b, e.t, 10)
			b = append(b, tablesSep...)
			b = append(b, e.msg...)
			c.tasks = append(c.tasks, id+fieldEnd, string(b))
			c.ended = append(c.ended, redis.Z{Score: float64(e.t), Member: id})
		case evActorCreated:
			w.actors[e.id] = &actorInfo{created: e.t}
			dirty[e.id] = true
		case evActorPlaced:
			if a := w.actors[e.id]; a != nil {
				// As the restart core counts: a start again is a restart
				// only after a process connected. A start that failed
				// before its process connected (its node died too) is
				// the same restart tried again.
				if e.msg == "" && a.placed {
					a.restarts++
				}
				a.placed = e.msg != ""
				dirty[e.id] = true
			}
		case evActorDied:
			if a := w.actors[e.id]; a != nil && a.ended == 0 {
				a.ended = e.t
				c.actorsGone = append(c.actorsGone, redis.Z{Score: float64(e.t), Member: id})
				dirty[e.id] = true
			}
		case evError:
			worker, msg, _ := strings.Cut(e.msg, "\x00")
			j, _ := json.Marshal(loggedError{Function: e.name, Worker: worker, Message: msg, Time: e.t})
			c.errs = append(c.errs, j)
		}
	}
	for id := range dirty {
		a := w.actors[id]
		rec, _ := w.rc.local.Actor(id)
		j, _ := json.Marshal(actorRow{Type: rec.Type, Worker: rec.Worker, Death: rec.Death, Node: a.node,
			Restarts: a.restarts, Created: a.created, Ended: a.ended})
		c.actors = append(c.actors, id.String(), j)
	}
	st := w.rc
	c.counts = []any{"submitted", st.submitted.Load(), "finished", st.finished.Load(), "failed", st.failed.Load(),
		"dropped", dropped, "evicted", w.evicted.Load()}
	return c
}

// list adds a task to the table's entries, evicting the oldest past max.
func (w *recordWriter) list(id ids.TaskID, c *recordCmds) {
	if _, ok := w.listed[id]; ok {
		return // submitted again (a rebuild): the same entry
	}
	w.listed[id] = struct{}{}
	if len(w.ring) < w.max {
		w.ring = append(w.ring, id)
		return
	}
	old := w.ring[w.head]
	w.ring[w.head] = id
	w.head = (w.head + 1) % len(w.ring)
	delete(w.listed, old)
	s := old.String()
	c.evictF = append(c.evictF, s+fieldSpec, s+fieldRun, s+fieldEnd)
	c.evictIDs = append(c.evictIDs, s)
	w.evicted.Add(1)
}

// exec sends a batch's writes as one pipeline. It reports false when
// Redis could not be reached (the caller tries again).
func (w *recordWriter) exec(c *recordCmds) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := w.rc.r
	p := r.c.Pipeline()
	tasks, ended := r.jobKey("tasks"), r.jobKey("tasks-ended")
	if len(c.tasks) > 0 {
		p.HSet(ctx, tasks, c.tasks...)
	}
	if len(c.ended) > 0 {
		p.ZAdd(ctx, ended, c.ended...)
	}
	// After the sets: a task evicted in this batch was written in it too.
	if len(c.evictF) > 0 {
		p.HDel(ctx, tasks, c.evictF...)
		p.ZRem(ctx, ended, c.evictIDs...)
	}
	if len(c.actors) > 0 {
		p.HSet(ctx, r.jobKey("actors"), c.actors...)
	}
	if len(c.actorsGone) > 0 {
		p.ZAdd(ctx, r.jobKey("actors-ended"), c.actorsGone...)
	}
	if len(c.errs) > 0 {
		key := r.jobKey("errors")
		p.RPush(ctx, key, c.errs...)
		p.LTrim(ctx, key, int64(-w.max), -1)
	}
	p.HSet(ctx, r.jobKey(stateField), c.counts...)
	cmds, err := p.Exec(ctx)
	if err != nil && retryable(err, cmds) {
		return false
	}
	return true
}

// writeCounts writes the job's counts as they are now (Close's last
// write, after the writer stopped).
func (w *recordWriter) writeCounts(ctx context.Context) error {
	rc := w.rc
	rc.mu.Lock()
	dropped := rc.dropped
	rc.mu.Unlock()
	c := w.build(nil, dropped)
	if err := rc.r.c.HSet(ctx, rc.r.jobKey(stateField), c.counts...).Err(); err != nil {
		return errors.Join(errors.New("control: writing the job's task counts"), err)
	}
	return nil
}
