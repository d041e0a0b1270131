package control

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// Dead nodes and ended jobs leave the tables once kept for the setting's
// time, with the ended job's own keys; live ones stay.
func TestPruneDropsDeadNodesAndEndedJobs(t *testing.T) {
	srv, _ := startServer(t)
	ctx := context.Background()
	r := dial(t, srv.Addr(), "live")
	for _, id := range []string{"n-live", "n-dead"} {
		if err := r.RegisterNode(ctx, NodeInfo{ID: id, IP: "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.DeclareDead(ctx, "n-dead", "test"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"live", "ended"} {
		if err := r.RegisterJob(ctx, JobInfo{ID: id, Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PublishLoad(JobLoad{Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ended := dial(t, srv.Addr(), "ended")
	ended.AddLocation(ids.Return(ids.Root(1, true), 0), "n-live")
	if err := ended.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.EndJob(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	// Kept for an hour: nothing goes.
	if st, err := r.Prune(ctx, time.Hour); err != nil || st != (PruneStats{}) {
		t.Fatalf("Prune(1h) = %+v, %v; want nothing removed", st, err)
	}
	if st, err := r.Prune(ctx, 0); err != nil || st != (PruneStats{Nodes: 1, Jobs: 1}) {
		t.Fatalf("Prune(0) = %+v, %v; want the dead node and the ended job removed", st, err)
	}
	nodes, err := r.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].ID != "n-live" {
		t.Errorf("nodes after pruning: %+v, %v; want n-live only", nodes, err)
	}
	jobs, err := r.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "live" {
		t.Errorf("jobs after pruning: %+v, %v; want the live job only", jobs, err)
	}
	if keys, _ := r.c.Keys(ctx, "gray:job:ended:*").Result(); len(keys) != 0 {
		t.Errorf("the ended job's keys are left: %v", keys)
	}
}

// A killed driver ends no job: its job reads as ended as soon as its load
// is overdue (gray list showed it, its actors and its tasks running until
// the head's next prune, up to 30 s later), and the next prune records
// that end for good. A job whose driver publishes stays running.
func TestJobOfAKilledDriverReadsEndedAtOnce(t *testing.T) {
	srv, _ := startServer(t)
	ctx := context.Background()
	long := time.Now().Add(-3 * LoadTTL)
	live := dial(t, srv.Addr(), "live")
	for _, id := range []string{"live", "killed", "new"} {
		started := long
		if id == "new" { // not yet due to have published
			started = time.Now()
		}
		if err := live.RegisterJob(ctx, JobInfo{ID: id, Started: started}); err != nil {
			t.Fatal(err)
		}
	}
	if err := live.PublishLoad(JobLoad{Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := live.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ended := func() map[string]bool {
		jobs, err := live.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, j := range jobs {
			out[j.ID] = !j.Ended.IsZero()
		}
		return out
	}
	want := map[string]bool{"live": false, "killed": true, "new": false}
	if got := ended(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ended before a prune: %v, want %v", got, want)
	}
	if _, err := live.Prune(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	b, err := live.c.HGet(ctx, keyJobs, "killed").Bytes()
	var j JobInfo
	if err != nil || json.Unmarshal(b, &j) != nil || j.Ended.IsZero() {
		t.Errorf("the killed driver's job record after a prune: %s, %v; want its end written", b, err)
	}
}
