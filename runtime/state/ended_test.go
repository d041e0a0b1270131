package state

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/control"
)

// An ended job's driver is gone, and its actors and unfinished tasks with
// it: `gray list` must not show them alive or running for --keep-ended.
func TestEndedJobsEntriesAreEnded(t *testing.T) {
	end := time.UnixMilli(1_800_000_000_000)
	died := end.Add(-time.Minute)
	tb := tables{
		jobs: []control.JobInfo{{ID: "run"}, {ID: "over", Ended: end}},
		actors: map[string][]control.ActorEntry{
			"run": {{ID: "a1", Job: "run", State: control.ActorAlive}},
			"over": {
				{ID: "a2", Job: "over", State: control.ActorAlive},
				{ID: "a3", Job: "over", State: control.ActorRestarting, Restarts: 1},
				{ID: "a4", Job: "over", State: control.ActorDead, Death: "killed", Ended: died},
			},
		},
		tasks: map[string][]control.TaskEntry{
			"run": {{ID: "t1", Job: "run", State: control.TaskRunning}},
			"over": {
				{ID: "t2", Job: "over", State: control.TaskRunning},
				{ID: "t3", Job: "over", State: control.TaskSubmittedState},
				{ID: "t4", Job: "over", State: control.TaskFinishedState},
				{ID: "t5", Job: "over", State: control.TaskFailed, Error: "boom"},
			},
		},
	}
	for _, tc := range []struct {
		kind, want string
	}{
		{"actors", "a1 alive - ; a2 dead its job ended " + at(stamp(end)) + "; a3 dead its job ended " + at(stamp(end)) + "; a4 dead killed " + at(stamp(died))},
		{"tasks", "t1 running - ; t2 failed " + taskEndedWithJob + " " + at(stamp(end)) + "; t3 failed " + taskEndedWithJob + " " + at(stamp(end)) + "; t4 finished - ; t5 failed boom "},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			res, err := List(context.Background(), tb, tc.kind, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, row := range res.Rows {
				switch r := row.(type) {
				case ActorRow:
					got = append(got, fmt.Sprintf("%s %s %s %s", r.ActorID, r.State, orDash(r.DeathReason), at(r.EndedAt)))
				case TaskRow:
					got = append(got, fmt.Sprintf("%s %s %s %s", r.TaskID, r.State, orDash(r.ErrorMessage), at(r.EndedAt)))
				}
			}
			if s := strings.Join(got, "; "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func at(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}
