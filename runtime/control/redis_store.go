package control

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
	"github.com/redis/go-redis/v9"
)

// Actor reads an actor's row, as a Recorder of the job wrote it, from the
// job's actor table (waiting at most 2 s): how a Recorder answers for the
// actors another client of the job created.
func (r *Redis) Actor(id ids.ActorID) (ActorRecord, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := r.c.HGet(ctx, r.jobKey("actors"), id.String()).Bytes()
	if err != nil {
		return ActorRecord{}, false
	}
	var rec ActorRecord
	if json.Unmarshal(b, &rec) != nil {
		return ActorRecord{}, false
	}
	return rec, true
}

// Actors reads the job's actor table from Redis.
func (r *Redis) Actors(ctx context.Context) (map[ids.ActorID]ActorRecord, error) {
	m, err := r.c.HGetAll(ctx, r.jobKey("actors")).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the actor table: %w", err)
	}
	out := make(map[ids.ActorID]ActorRecord, len(m))
	for k, v := range m {
		id, err := parseTaskID(k)
		if err != nil {
			continue
		}
		var rec ActorRecord
		if json.Unmarshal([]byte(v), &rec) == nil {
			out[id] = rec
		}
	}
	return out, nil
}

// loggedError is how the error log stores a task failure.
type loggedError struct {
	Function, Worker, Message, Stack string
	Time                             int64 `json:",omitempty"` // Unix milliseconds
}

// ErrorLog reads the job's error log from Redis: every failure any client
// of the job (its Recorders) recorded.
func (r *Redis) ErrorLog(ctx context.Context) ([]*task.TaskError, error) {
	vs, err := r.c.LRange(ctx, r.jobKey("errors"), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the error log: %w", err)
	}
	out := make([]*task.TaskError, 0, len(vs))
	for _, v := range vs {
		var e loggedError
		if json.Unmarshal([]byte(v), &e) == nil {
			out = append(out, &task.TaskError{Function: e.Function, Worker: e.Worker, Message: e.Message, Stack: e.Stack})
		}
	}
	return out, nil
}

// JobInfo is a cluster's record of a job: a driver connected to it.
type JobInfo struct {
	ID      string
	Driver  string // who runs it, e.g. "host pid 1234"
	Node    string // the driver's node ID
	Started time.Time
	Ended   time.Time // zero while it runs
	// Submitted and Finished count its tasks (Finished includes the
	// Failed), as its driver's Recorder last wrote them; Dropped counts
	// events its Recorder could not buffer, Evicted task entries that
	// left the table for the cap on entries per job.
	Submitted, Finished, Failed, Dropped, Evicted uint64
	// Load is what the job runs where, as its driver last published it
	// (PublishLoad); nil when none is recent (the driver ended or died).
	// Jobs fills it in; RegisterJob does not store it.
	Load *JobLoad `json:",omitempty"`
	// driverGone is set by Jobs on a job it reads as ended because its
	// driver stopped publishing without ending it: Prune records that.
	driverGone bool
}

// endIfDriverGone ends, as of now, a job whose driver was killed: one
// that should publish its load every LoadTTL/2 while it lives and has
// none, after its first 2×LoadTTL. Every reader of the job table (gray
// list and status, the dashboard) then sees it ended at once, not when
// the head's next prune writes it down.
func (j *JobInfo) endIfDriverGone(now time.Time) {
	if j.Ended.IsZero() && j.Load == nil && now.Sub(j.Started) > 2*LoadTTL {
		j.Ended, j.driverGone = now, true
	}
}

// RegisterJob records a job (directly, not batched).
func (r *Redis) RegisterJob(ctx context.Context, j JobInfo) error {
	if j.ID == "" {
		return errors.New("control: a job needs an ID")
	}
	j.Load = nil
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("control: encoding job %s: %w", j.ID, err)
	}
	if err := r.c.HSet(ctx, keyJobs, j.ID, b).Err(); err != nil {
		return fmt.Errorf("control: registering job %s: %w", j.ID, err)
	}
	return nil
}

// EndJob records that a job ended.
func (r *Redis) EndJob(ctx context.Context, id string) error {
	b, err := r.c.HGet(ctx, keyJobs, id).Bytes()
	if err != nil {
		return fmt.Errorf("control: ending job %s: %w", id, err)
	}
	var j JobInfo
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("control: job %s's record: %w", id, err)
	}
	j.Ended = time.Now()
	if err := r.RegisterJob(ctx, j); err != nil {
		return err
	}
	// Its load is no longer current: drop it once queued writes (a last
	// publish among them) are sent.
	if err := r.Flush(ctx); err != nil {
		return err
	}
	if err := r.c.Del(ctx, "gray:job:"+id+":load").Err(); err != nil {
		return fmt.Errorf("control: ending job %s: %w", id, err)
	}
	return nil
}

// Jobs lists the cluster's jobs, oldest first, with their task counts.
func (r *Redis) Jobs(ctx context.Context) ([]JobInfo, error) {
	m, err := r.c.HGetAll(ctx, keyJobs).Result()
	if err != nil {
		return nil, fmt.Errorf("control: reading the job table: %w", err)
	}
	out := make([]JobInfo, 0, len(m))
	for _, v := range m {
		var j JobInfo
		if json.Unmarshal([]byte(v), &j) == nil {
			out = append(out, j)
		}
	}
	p := r.c.Pipeline()
	states := make([]*redis.MapStringStringCmd, len(out))
	for i, j := range out {
		states[i] = p.HGetAll(ctx, "gray:job:"+j.ID+":state")
	}
	if len(out) > 0 {
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("control: reading job states: %w", err)
		}
	}
	for i := range out {
		m := states[i].Val()
		fmt.Sscan(m["submitted"], &out[i].Submitted)
		fmt.Sscan(m["finished"], &out[i].Finished)
		fmt.Sscan(m["failed"], &out[i].Failed)
		fmt.Sscan(m["dropped"], &out[i].Dropped)
		fmt.Sscan(m["evicted"], &out[i].Evicted)
	}
	if err := r.readLoads(ctx, out); err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range out {
		out[i].endIfDriverGone(now)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

func parseTaskID(s string) (ids.TaskID, error) {
	var id ids.TaskID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%q is not a task ID", s)
	}
	copy(id[:], b)
	return id, nil
}
