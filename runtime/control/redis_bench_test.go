package control

import (
	"context"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// BenchmarkRedisPerTask measures what the Redis store costs a task: the
// object-location write a cluster node makes for every task's result,
// reported as Redis commands and round trips per task. The peer is one synchronous Redis
// command per task, what a store on the hot path would cost. ns/op is
// until Redis has everything (with the default appendfsync always, on
// disk); caller-ns/task is the caller's share (the scheduler's, under its
// lock), the rest is the writer's, off the hot path.
func BenchmarkRedisPerTask(b *testing.B) {
	s, _ := startServer(b)
	root := ids.Root(3, true)
	for _, bc := range []struct {
		name string
		op   func(r *Redis, i int)
	}{
		{"location", func(r *Redis, i int) {
			r.AddLocation(ids.Return(ids.Child(root, uint64(i)), 0), "node-a")
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
