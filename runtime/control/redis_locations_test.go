package control

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
)

// A dead or replaced node's entries leave the object-location table of
// every job, and nothing else does.
func TestLocationsOfAGoneNodeAreForgotten(t *testing.T) {
	s, _ := startServer(t)
	ctx := context.Background()
	root := ids.Root(3, true)
	obj := func(i uint64) ids.ObjectID { return ids.Return(ids.Child(root, i), 0) }
	// setup lists objects 1 and 2 on node-a, 1 on node-b, in two jobs.
	setup := func(t *testing.T) (jobs []*Redis) {
		for _, job := range []string{"job-" + t.Name() + "-1", "job-" + t.Name() + "-2"} {
			r := dial(t, s.Addr(), job)
			if err := r.RegisterJob(ctx, JobInfo{ID: job, Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			r.AddLocation(obj(1), "node-a")
			r.AddLocation(obj(2), "node-a")
			r.AddLocation(obj(1), "node-b")
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, r)
		}
		return jobs
	}
	// check fails the test unless every job lists object 1 on node-b
	// only, object 2 nowhere and nothing on node-a.
	check := func(t *testing.T, jobs []*Redis) {
		t.Helper()
		for _, r := range jobs {
			for i, want := range [][]string{{"node-b"}, {}} {
				if locs, err := r.Locations(ctx, obj(uint64(i+1))); err != nil || !slices.Equal(locs, want) {
					t.Fatalf("job %s: object %d is on %q (%v), want %q", r.Job(), i+1, locs, err, want)
				}
			}
			if held, err := r.Held(ctx, "node-a"); err != nil || len(held) != 0 {
				t.Fatalf("job %s still lists %q on node-a (%v)", r.Job(), held, err)
			}
		}
	}
	t.Run("declared dead: ForgetNode, for every job", func(t *testing.T) {
		jobs := setup(t)
		head := dial(t, s.Addr(), "")
		n, err := head.ForgetNode(ctx, "node-a")
		if err != nil || n != 4 {
			t.Fatalf("ForgetNode = %d, %v; want the 2 objects of each of the 2 jobs", n, err)
		}
		check(t, jobs)
	})
	t.Run("dropped by the driver: ForgetNodeQueued, for its job", func(t *testing.T) {
		jobs := setup(t)
		for _, r := range jobs {
			r.ForgetNodeQueued("node-a")
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		check(t, jobs)
	})
	t.Run("stopped: MarkDead", func(t *testing.T) {
		head := dial(t, s.Addr(), "")
		if err := head.RegisterNode(ctx, NodeInfo{ID: "node-a", Started: time.Unix(500, 0)}); err != nil {
			t.Fatal(err)
		}
		jobs := setup(t)
		if err := head.MarkDead(ctx, "node-a", "stopped"); err != nil {
			t.Fatal(err)
		}
		check(t, jobs)
	})
	t.Run("a new process under the node's ID registers", func(t *testing.T) {
		head := dial(t, s.Addr(), "")
		first := NodeInfo{ID: "node-a", Started: time.Unix(1000, 5)}
		if err := head.RegisterNode(ctx, first); err != nil {
			t.Fatal(err)
		}
		jobs := setup(t)
		// The same process registering again (Redis lost the node, say)
		// keeps its objects.
		if err := head.RegisterNode(ctx, first); err != nil {
			t.Fatal(err)
		}
		if held, _ := jobs[0].Held(ctx, "node-a"); len(held) != 2 {
			t.Fatalf("node-a registering again lost its locations: %q", held)
		}
		if err := head.RegisterNode(ctx, NodeInfo{ID: "node-a", Started: time.Unix(2000, 0)}); err != nil {
			t.Fatal(err)
		}
		check(t, jobs)
	})
}
