package restart

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// entry is the shell's record in Queue's tests: the name of its task and,
// for one made by Queue, whether it only replays ("discard").
type entry struct {
	name string
	kind task.Kind
}

func (c entry) Kind() task.Kind { return c.kind }

func TestQueue(t *testing.T) {
	restore := &task.Spec{ID: ids.Child(actor, 1<<62), Kind: task.KindActorRestore, Func: "Counter"}
	name := func(s *task.Spec) string {
		if s == restore {
			return "restore"
		}
		return names[s.ID]
	}
	again := func(s *task.Spec, discard bool) entry {
		c := entry{name: "again " + name(s), kind: s.Kind}
		if discard {
			c.name += " (discard)"
		}
		return c
	}
	queued := func(s *task.Spec) entry { return entry{name: name(s), kind: s.Kind} }
	for _, tc := range []struct {
		name   string
		effect Effect
		queued []entry
		want   []string
	}{
		{"creation, then the calls not sent",
			Effect{Kind: Restart, Spec: create}, []entry{queued(c3)},
			[]string{"again create", "c3"}},
		{"creation, restore, replays, then the calls not sent",
			Effect{Kind: Restart, Spec: create, Restore: restore, Replay: []Replay{{Spec: c1, Discard: true}, {Spec: c2}}},
			[]entry{queued(c3), queued(c4)},
			[]string{"again create", "again restore (discard)", "again c1 (discard)", "again c2", "c3", "c4"}},
		{"an earlier restart's creation is reused, its restore dropped, its replays kept behind",
			Effect{Kind: Restart, Spec: create, Restore: restore, Replay: []Replay{{Spec: c1, Discard: true}}},
			[]entry{{"create (earlier)", task.KindActorCreate}, {"restore (earlier)", task.KindActorRestore}, {"again c2 (earlier)", task.KindActorMethod}, queued(c3)},
			[]string{"create (earlier)", "again restore (discard)", "again c1 (discard)", "again c2 (earlier)", "c3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Queue(tc.effect, tc.queued, again) {
				got = append(got, c.name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
