package node

import (
	"errors"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// TestBadMessage: a worker that sends what the node cannot decode is cut
// off as if it had died: its running task fails with ErrWorkerDied (its
// results cannot be trusted), and a new worker runs the next task.
func TestBadMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typ     byte
		payload []byte
	}{
		{"an unknown message type", 200, nil},
		{"a result cut short", task.MsgResult, []byte{1, 2, 3}},
		{"a Get cut short", task.MsgGet, []byte{7, 5}},
		{"a Put cut short", task.MsgPut, []byte{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 1, 1)
			fw := h.worker()
			s := h.submit(value("doomed"))
			fw.exec(t)
			fw.send(t, tc.typ, func(b []byte) []byte { return append(b, tc.payload...) })
			if o := h.get(s.Return(0)); !errors.Is(o.Err, task.ErrWorkerDied) {
				t.Fatalf("Get = %q, %v; want an error that is ErrWorkerDied", o.Data, o.Err)
			}
			next := h.worker()
			s2 := h.submit(value("next"))
			next.result(t, next.exec(t), "ok")
			if o := h.get(s2.Return(0)); string(o.Data) != "ok" {
				t.Fatalf("Get after the cut = %q, %v; want %q", o.Data, o.Err, "ok")
			}
		})
	}
}
