package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/redis/go-redis/v9"
)

// DefaultMaxTaskRecords is how many task entries a job keeps in Redis
// when the head was given no other setting: past it the oldest leave.
const DefaultMaxTaskRecords = 10000

// keySettings holds the head's settings for the tables (ClusterSettings).
const keySettings = "gray:settings"

// ClusterSettings are the head's bounds on the cluster's tables, kept in
// Redis so that every driver reads the same.
type ClusterSettings struct {
	// KeepEnded is how long dead nodes, ended jobs, and ended tasks and
	// dead actors stay listed (0: DefaultKeepEnded).
	KeepEnded time.Duration
	// MaxTaskRecords bounds the task entries each job keeps (0:
	// DefaultMaxTaskRecords).
	MaxTaskRecords int
}

// PutSettings records the head's settings.
func (r *Redis) PutSettings(ctx context.Context, s ClusterSettings) error {
	err := r.c.HSet(ctx, keySettings, "keep_ended_ms", s.KeepEnded.Milliseconds(), "max_task_records", s.MaxTaskRecords).Err()
	if err != nil {
		return fmt.Errorf("control: recording the cluster's settings: %w", err)
	}
	return nil
}

// Settings reads the head's settings; zero fields were not set.
func (r *Redis) Settings(ctx context.Context) (ClusterSettings, error) {
	m, err := r.c.HGetAll(ctx, keySettings).Result()
	if err != nil {
		return ClusterSettings{}, fmt.Errorf("control: reading the cluster's settings: %w", err)
	}
	var s ClusterSettings
	if ms, err := strconv.ParseInt(m["keep_ended_ms"], 10, 64); err == nil {
		s.KeepEnded = time.Duration(ms) * time.Millisecond
	}
	s.MaxTaskRecords, _ = strconv.Atoi(m["max_task_records"])
	return s, nil
}

// TaskState is where a task is: submitted (queued or waiting for its
// arguments), running (sent to a worker), finished or failed.
type TaskState string

// The task states.
const (
	TaskSubmittedState TaskState = "submitted"
	TaskRunning        TaskState = "running"
	TaskFinishedState  TaskState = "finished"
	TaskFailed         TaskState = "failed"
)

// TaskEntry is a job's record of one task.
type TaskEntry struct {
	ID                        string
	Job                       string
	Function                  string
	Kind                      string // "function", "actor_creation" or "actor_method"
	Actor                     string // a method's actor; an actor creation's is its own ID
	Node                      string // where it was last sent; "" before
	State                     TaskState
	Error                     string // the first line of a failure
	Submitted, Started, Ended time.Time
}

// kindName names a task kind in the tables.
func kindName(k task.Kind) string {
	switch k {
	case task.KindActorCreate:
		return "actor_creation"
	case task.KindActorMethod:
		return "actor_method"
	}
	return "function"
}

// JobTasks reads the task table of a job (any job, not only this
// client's), in submission order.
func (r *Redis) JobTasks(ctx context.Context, job string) ([]TaskEntry, error) {
	m, err := r.c.HGetAll(ctx, "gray:job:"+job+":tasks").Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the tasks of job %s: %w", job, err)
	}
	byID := map[string]*TaskEntry{}
	get := func(id string) *TaskEntry {
		e := byID[id]
		if e == nil {
			e = &TaskEntry{ID: id, Job: job, State: TaskSubmittedState}
			byID[id] = e
		}
		return e
	}
	for f, v := range m {
		if len(f) < 3 {
			continue
		}
		id, part := f[:len(f)-2], f[len(f)-2:]
		switch part {
		case fieldSpec:
			p := strings.SplitN(v, tablesSep, 4)
			if len(p) != 4 {
				continue
			}
			e := get(id)
			k, _ := strconv.Atoi(p[0])
			e.Kind = kindName(task.Kind(k))
			e.Submitted = millis(p[1])
			e.Actor, e.Function = p[2], p[3]
			if task.Kind(k) == task.KindActorCreate {
				e.Actor = id
			}
		case fieldRun:
			t, node, ok := strings.Cut(v, tablesSep)
			if !ok {
				continue
			}
			e := get(id)
			e.Started, e.Node = millis(t), node
			if e.State == TaskSubmittedState {
				e.State = TaskRunning
			}
		case fieldEnd:
			p := strings.SplitN(v, tablesSep, 3)
			if len(p) != 3 {
				continue
			}
			e := get(id)
			e.State, e.Ended, e.Error = TaskState(p[0]), millis(p[1]), p[2]
		}
	}
	out := make([]TaskEntry, 0, len(byID))
	for _, e := range byID {
		if e.Function == "" && e.Submitted.IsZero() {
			continue // fields of an entry being evicted
		}
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Submitted.Equal(out[j].Submitted) {
			return out[i].Submitted.Before(out[j].Submitted)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// ActorState is where an actor is in its life.
type ActorState string

// The actor states.
const (
	ActorPending    ActorState = "pending" // created, its process not started yet
	ActorAlive      ActorState = "alive"
	ActorRestarting ActorState = "restarting"
	ActorDead       ActorState = "dead"
)

// ActorEntry is a job's record of one actor.
type ActorEntry struct {
	ID, Job, Class, Node string
	State                ActorState
	Restarts             int
	Death                string // why it died
	Created, Ended       time.Time
}

// JobActors reads the actor table of a job, oldest first.
func (r *Redis) JobActors(ctx context.Context, job string) ([]ActorEntry, error) {
	m, err := r.c.HGetAll(ctx, "gray:job:"+job+":actors").Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the actors of job %s: %w", job, err)
	}
	out := make([]ActorEntry, 0, len(m))
	for id, v := range m {
		var a actorRow
		if json.Unmarshal([]byte(v), &a) != nil {
			continue
		}
		e := ActorEntry{ID: id, Job: job, Class: a.Type, Node: a.Node, Restarts: a.Restarts, Death: a.Death}
		if a.Created != 0 {
			e.Created = time.UnixMilli(a.Created)
		}
		if a.Ended != 0 {
			e.Ended = time.UnixMilli(a.Ended)
		}
		switch {
		case a.Death != "":
			e.State = ActorDead
		case a.Worker != "":
			e.State = ActorAlive
		case a.Restarts > 0:
			e.State = ActorRestarting
		default:
			e.State = ActorPending
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func millis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// pruneEnded removes a job's tasks that ended, and actors that died, more
// than keep ago. It returns how many of each left.
func (r *Redis) pruneEnded(ctx context.Context, job string, keep time.Duration) (tasks, actors int, err error) {
	cut := strconv.FormatInt(time.Now().Add(-keep).UnixMilli(), 10)
	pre := "gray:job:" + job + ":"
	for _, t := range []struct {
		hash, zset string
		fields     []string
		n          *int
	}{
		{pre + "tasks", pre + "tasks-ended", []string{fieldSpec, fieldRun, fieldEnd}, &tasks},
		{pre + "actors", pre + "actors-ended", []string{""}, &actors},
	} {
		gone, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: t.zset, Start: "-inf", Stop: cut, ByScore: true}).Result()
		if err != nil {
			return tasks, actors, fmt.Errorf("control: pruning the ended entries of job %s: %w", job, err)
		}
		if len(gone) == 0 {
			continue
		}
		fields := make([]string, 0, len(gone)*len(t.fields))
		members := make([]any, len(gone))
		for i, id := range gone {
			members[i] = id
			for _, f := range t.fields {
				fields = append(fields, id+f)
			}
		}
		_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, t.hash, fields...)
			p.ZRem(ctx, t.zset, members...)
			return nil
		})
		if err != nil {
			return tasks, actors, fmt.Errorf("control: pruning the ended entries of job %s: %w", job, err)
		}
		*t.n += len(gone)
	}
	return tasks, actors, nil
}
