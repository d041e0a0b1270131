package control

import (
	"context"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// BenchmarkRedisPerTask measures what the Redis store costs a task: the
// Store calls the scheduler makes for every task, alone and with the
// cluster's lineage and object-location writes, reported as Redis
// commands and round trips per task. The peer is one synchronous Redis
// command per task, what a store on the hot path would cost. ns/op is
// until Redis has everything (with the default appendfsync always, on
// disk); caller-ns/task is the caller's share (the scheduler's, under its
// lock), the rest is the writer's, off the hot path.
func BenchmarkRedisPerTask(b *testing.B) {
	s, _ := startServer(b)
	root := ids.Root(3, true)
	spec := make([]byte, 200)
	for _, bc := range []struct {
		name string
		op   func(r *Redis, i int)
	}{
		{"store", func(r *Redis, i int) {
			s := &task.Spec{ID: ids.Child(root, uint64(i)), Func: "f"}
			r.TaskSubmitted(s)
			r.TaskFinished(s.ID, nil)
		}},
		{"store+lineage+location", func(r *Redis, i int) {
			s := &task.Spec{ID: ids.Child(root, uint64(i)), Func: "f"}
			r.TaskSubmitted(s)
			r.PutLineage(s.ID, spec)
			r.AddLocation(s.Return(0), "node-a")
			r.TaskFinished(s.ID, nil)
		}},
		{"peer-sync-command", func(r *Redis, i int) {
			r.c.Set(context.Background(), r.jobKey("peer"), i, 0)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := dial(b, s.Addr(), "bench")
			before := r.Stats()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				bc.op(r, i)
			}
			enqueued := time.Since(start)
			if err := r.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(enqueued.Nanoseconds())/float64(b.N), "caller-ns/task")
			st := r.Stats()
			b.ReportMetric(float64(st.Commands-before.Commands)/float64(b.N), "cmds/task")
			b.ReportMetric(float64(st.RoundTrips-before.RoundTrips)/float64(b.N), "roundtrips/task")
		})
	}
}
