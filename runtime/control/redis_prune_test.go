package control

import (
	"context"
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
