package events

import (
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
)

func TestTaskStartsWhenSentOrWhenThePreviousEnded(t *testing.T) {
	r := New(8)
	sent := r.Now()
	for r.Now() <= sent {
		// The first task ends after it was sent: wait for the clock to move.
	}
	r.Finished(1, ids.TaskID{1}, "a", sent) // ran from sent
	r.Finished(1, ids.TaskID{2}, "b", sent) // queued behind a: starts at a's end
	r.Finished(2, ids.TaskID{3}, "c", sent) // another worker: from sent
	evs, dropped := r.Events()
	if len(evs) != 3 || dropped != 0 {
		t.Fatalf("%d events, %d dropped", len(evs), dropped)
	}
	if evs[0].Start != sent || evs[0].End <= evs[0].Start {
		t.Errorf("first task %+v, sent %d", evs[0], sent)
	}
	if evs[1].Start != evs[0].End {
		t.Errorf("second task starts at %d, the first ended at %d", evs[1].Start, evs[0].End)
	}
	if evs[2].Start != sent || evs[2].Worker != 2 || evs[2].Func != "c" {
		t.Errorf("third task %+v", evs[2])
	}
}

func TestRingKeepsTheLatestEvents(t *testing.T) {
	r := New(4)
	for i := 0; i < 10; i++ {
		r.Finished(0, ids.TaskID{byte(i)}, "f", r.Now())
	}
	evs, dropped := r.Events()
	if len(evs) != 4 || dropped != 6 {
		t.Fatalf("%d events, %d dropped; want 4 and 6", len(evs), dropped)
	}
	for i, e := range evs {
		if e.Task[0] != byte(6+i) {
			t.Errorf("event %d is task %d, want %d (oldest first)", i, e.Task[0], 6+i)
		}
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Finished(0, ids.TaskID{}, "f", r.Now())
	if evs, _ := r.Events(); evs != nil {
		t.Errorf("nil recorder returned %v", evs)
	}
}

func BenchmarkFinished(b *testing.B) {
	r := New(0)
	for i := 0; b.Loop(); i++ {
		r.Finished(i&7, ids.TaskID{}, "f", r.Now())
	}
}
