package control

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

func taskID(b byte, i int) ids.TaskID {
	var id ids.TaskID
	id[0], id[1], id[2] = b, byte(i>>8), byte(i)
	return id
}

// TestRecorderTables runs a Recorder's events into a real Redis and reads
// the tables back: every state a task and an actor pass through, where
// they ran, and a failure's message.
func TestRecorderTables(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "job1")
	rc := NewRecorder(context.Background(), r, RecorderConfig{Node: "driver-node"})
	defer rc.Close()

	done, failed, running, queued := taskID(1, 1), taskID(1, 2), taskID(1, 3), taskID(1, 4)
	actor, call := taskID(2, 1), taskID(2, 2)
	rc.TaskSubmitted(&task.Spec{ID: done, Func: "f"})
	rc.TaskStarted(done, "")
	rc.TaskFinished(done, nil)
	rc.TaskSubmitted(&task.Spec{ID: failed, Func: "g"})
	rc.TaskStarted(failed, "node-b")
	rc.TaskFinished(failed, &task.TaskError{Function: "g", Message: "boom\nstack..."})
	rc.AddError(&task.TaskError{Function: "g", Message: "boom"})
	rc.TaskSubmitted(&task.Spec{ID: running, Func: "h"})
	rc.TaskStarted(running, "node-c")
	rc.TaskSubmitted(&task.Spec{ID: queued, Func: "q"})
	rc.TaskSubmitted(&task.Spec{ID: actor, Func: "Counter", Kind: task.KindActorCreate})
	rc.ActorCreated(actor, "Counter", "")
	rc.TaskStarted(actor, "node-b")
	rc.ActorPlaced(actor, "worker 1 on node-b")
	rc.TaskFinished(actor, nil)
	rc.ActorPlaced(actor, "") // its process died: starting again elsewhere
	rc.TaskStarted(actor, "node-c")
	rc.ActorPlaced(actor, "worker 2 on node-c")
	call0 := task.Spec{ID: call, Func: "Counter.Add", Kind: task.KindActorMethod}
	call0.SetActor(actor)
	rc.TaskSubmitted(&call0)

	ctx := context.Background()
	if err := rc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := r.JobTasks(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[ids.TaskID]struct {
		state      TaskState
		fn, node   string
		kind, errs string
	}{
		done:    {TaskFinishedState, "f", "driver-node", "function", ""},
		failed:  {TaskFailed, "g", "node-b", "function", "boom"},
		running: {TaskRunning, "h", "node-c", "function", ""},
		queued:  {TaskSubmittedState, "q", "", "function", ""},
		actor:   {TaskFinishedState, "Counter", "node-c", "actor_creation", ""},
		call:    {TaskSubmittedState, "Counter.Add", "", "actor_method", ""},
	}
	if len(tasks) != len(want) {
		t.Fatalf("listed %d tasks, want %d: %+v", len(tasks), len(want), tasks)
	}
	for _, e := range tasks {
		var id ids.TaskID
		for k := range want {
			if k.String() == e.ID {
				id = k
			}
		}
		w, ok := want[id]
		if !ok {
			t.Fatalf("unexpected task %+v", e)
		}
		if e.State != w.state || e.Function != w.fn || e.Node != w.node || e.Kind != w.kind || e.Error != w.errs || e.Job != "job1" {
			t.Errorf("task %s: got %+v, want %+v", e.ID, e, w)
		}
		if e.Submitted.IsZero() {
			t.Errorf("task %s has no submission time", e.ID)
		}
	}
	actors, err := r.JobActors(ctx, "job1")
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 1 || actors[0].State != ActorAlive || actors[0].Restarts != 1 || actors[0].Node != "node-c" || actors[0].Class != "Counter" {
		t.Fatalf("actors = %+v, want one alive Counter restarted once, on node-c", actors)
	}
	rc.ActorDied(actor, "killed")
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	actors, _ = r.JobActors(ctx, "job1")
	if len(actors) != 1 || actors[0].State != ActorDead || actors[0].Death != "killed" || actors[0].Ended.IsZero() {
		t.Fatalf("actors = %+v, want the Counter dead", actors)
	}
	if err := r.RegisterJob(ctx, JobInfo{ID: "job1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	jobs, err := r.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.Submitted != 6 || j.Finished != 3 || j.Failed != 1 {
		t.Fatalf("job counts %d submitted, %d finished, %d failed; want 6, 3, 1", j.Submitted, j.Finished, j.Failed)
	}
	log, err := r.ErrorLog(ctx)
	if err != nil || len(log) != 1 || log[0].Message != "boom" {
		t.Fatalf("error log = %v, %v", log, err)
	}
}

// TestRecorderCapsEntriesPerJob: past MaxTasks the oldest entries leave,
// and the job counts them.
func TestRecorderCapsEntriesPerJob(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "big")
	rc := NewRecorder(context.Background(), r, RecorderConfig{MaxTasks: 10})
	for i := range 25 {
		id := taskID(3, i)
		rc.TaskSubmitted(&task.Spec{ID: id, Func: "f"})
		rc.TaskStarted(id, "n")
		rc.TaskFinished(id, nil)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tasks, err := r.JobTasks(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 10 || tasks[0].ID != taskID(3, 15).String() {
		t.Fatalf("kept %d tasks (first %v), want the newest 10", len(tasks), tasks)
	}
	if n, _ := r.c.HLen(ctx, r.jobKey("tasks")).Result(); n != 30 {
		t.Fatalf("the task hash holds %d fields, want 30 (3 per kept task)", n)
	}
	if n, _ := r.c.ZCard(ctx, r.jobKey("tasks-ended")).Result(); n != 10 {
		t.Fatalf("the ended set holds %d, want 10", n)
	}
	if got := rc.Stats().Evicted; got != 15 {
		t.Fatalf("evicted %d, want 15", got)
	}
}

// TestRecorderDropsWhenFull: a full buffer drops events, counts them and
// says so once; the submitting side never waits.
func TestRecorderDropsWhenFull(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "full")
	var warn bytes.Buffer
	rc := newRecorder(context.Background(), r, RecorderConfig{Buffer: 4, Warn: &warn})
	for i := range 10 {
		rc.TaskSubmitted(&task.Spec{ID: taskID(4, i), Func: "f"})
	}
	go rc.run()
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rc.Stats().Dropped; got != 6 {
		t.Fatalf("dropped %d, want 6", got)
	}
	if strings.Count(warn.String(), "\n") != 1 || !strings.Contains(warn.String(), "counted, not listed") {
		t.Fatalf("warning %q, want one line that says events are dropped", warn.String())
	}
	ctx := context.Background()
	_ = r.RegisterJob(ctx, JobInfo{ID: "full", Started: time.Now()})
	jobs, _ := r.Jobs(ctx)
	if jobs[0].Dropped != 6 || jobs[0].Submitted != 10 {
		t.Fatalf("job record %+v, want 10 submitted and 6 dropped", jobs[0])
	}
	tasks, _ := r.JobTasks(ctx, "full")
	if len(tasks) != 4 {
		t.Fatalf("listed %d tasks, want the 4 buffered", len(tasks))
	}
}

// TestRecorderRate: past its rate a Recorder records no more tasks (nor
// their later events), and counts them.
func TestRecorderRate(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "fast")
	rc := NewRecorder(context.Background(), r, RecorderConfig{Rate: 5})
	for i := range 10 {
		id := taskID(6, i)
		rc.TaskSubmitted(&task.Spec{ID: id, Func: "f"})
		rc.TaskStarted(id, "n")
		rc.TaskFinished(id, nil)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	tasks, _ := r.JobTasks(context.Background(), "fast")
	st := rc.Stats()
	// A second's worth (5) is recorded at once; a slow machine may have
	// refilled a token or two meanwhile.
	if len(tasks) < 5 || len(tasks) > 7 || st.Dropped != uint64(10-len(tasks)) || st.Finished != 10 {
		t.Fatalf("recorded %d tasks, dropped %d, finished %d: want 5-7 recorded, the rest dropped, 10 counted", len(tasks), st.Dropped, st.Finished)
	}
	for _, e := range tasks {
		if e.State != TaskFinishedState || e.Function != "f" {
			t.Fatalf("a recorded task: %+v", e)
		}
	}
}

// TestPruneEndedEntries: Prune removes tasks that ended and actors that
// died longer than keep ago from a running job, and keeps the rest.
func TestPruneEndedEntries(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "long")
	ctx := context.Background()
	if err := r.RegisterJob(ctx, JobInfo{ID: "long", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rc := NewRecorder(ctx, r, RecorderConfig{})
	ended, live, actor := taskID(5, 1), taskID(5, 2), taskID(5, 3)
	rc.TaskSubmitted(&task.Spec{ID: ended, Func: "f"})
	rc.TaskFinished(ended, nil)
	rc.TaskSubmitted(&task.Spec{ID: live, Func: "f"})
	rc.ActorCreated(actor, "A", "")
	rc.ActorDied(actor, "gone")
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	_ = r.PublishLoad(JobLoad{}) // the driver lives
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := r.Prune(ctx, time.Hour)
	if err != nil || st.Tasks != 0 || st.Actors != 0 {
		t.Fatalf("Prune(1h) = %+v, %v; want nothing removed", st, err)
	}
	time.Sleep(2 * time.Millisecond) // entries end at a millisecond's resolution
	st, err = r.Prune(ctx, time.Millisecond)
	if err != nil || st.Tasks != 1 || st.Actors != 1 || st.Jobs != 0 {
		t.Fatalf("Prune(1ms) = %+v, %v; want 1 task and 1 actor removed, the job kept", st, err)
	}
	tasks, _ := r.JobTasks(ctx, "long")
	if len(tasks) != 1 || tasks[0].ID != live.String() {
		t.Fatalf("tasks after pruning: %+v, want only the live one", tasks)
	}
	if actors, _ := r.JobActors(ctx, "long"); len(actors) != 0 {
		t.Fatalf("actors after pruning: %+v, want none", actors)
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "")
	ctx := context.Background()
	if got, err := r.Settings(ctx); err != nil || got != (ClusterSettings{}) {
		t.Fatalf("Settings before any = %+v, %v", got, err)
	}
	want := ClusterSettings{KeepEnded: 90 * time.Second, MaxTaskRecords: 77}
	if err := r.PutSettings(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Settings(ctx); err != nil || got != want {
		t.Fatalf("Settings = %+v, %v; want %+v", got, err, want)
	}
	rc := NewRecorder(ctx, dial(t, s.Addr(), "j"), RecorderConfig{})
	defer rc.Close()
	if rc.w.max != 77 {
		t.Fatalf("a Recorder keeps %d entries, want the head's 77", rc.w.max)
	}
}

// A restart whose new process never connected (a node killed under an
// actor restarts it on that node until its death is declared) is tried
// again without counting twice: `gray list actors` showed 2 restarts of
// an actor with MaxRestarts(1) that had restarted once.
func TestRecorderCountsRestartsAsTheRestartCoreDoes(t *testing.T) {
	s, _ := startServer(t)
	r := dial(t, s.Addr(), "job1")
	rc := NewRecorder(context.Background(), r, RecorderConfig{Node: "driver-node"})
	defer rc.Close()
	actor := taskID(2, 1)
	rc.TaskSubmitted(&task.Spec{ID: actor, Func: "Counter", Kind: task.KindActorCreate})
	rc.ActorCreated(actor, "Counter", "")
	ctx := context.Background()
	for _, step := range []struct {
		worker   string
		restarts int
	}{
		{"worker 1 on node-b", 0},
		{"", 1},
		{"", 1}, // the restart's process never connected: tried again
		{"worker 2 on node-c", 1},
		{"", 2},
		{"worker 3 on node-c", 2},
	} {
		rc.ActorPlaced(actor, step.worker)
		if err := rc.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		actors, err := r.JobActors(ctx, "job1")
		if err != nil || len(actors) != 1 || actors[0].Restarts != step.restarts {
			t.Fatalf("after placing on %q: actors %+v, %v; want %d restarts", step.worker, actors, err, step.restarts)
		}
	}
}
