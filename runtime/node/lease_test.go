package node

import (
	"testing"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// TestLeaseGrantAndEnd steps a lease through the shell with workers played
// by the test: the owner (running a task) asks, the idle worker is asked to
// listen, the owner gets its address and the lease holds a CPU until it is
// returned or its owner dies.
func TestLeaseGrantAndEnd(t *testing.T) {
	for _, end := range []string{"returned", "owner died"} {
		t.Run(end, func(t *testing.T) {
			h := newHarness(t, 2, 2)
			a, b := h.worker(), h.worker()
			h.submit(value("x"))
			owner, leased := a, b
			var f frame
			select { // the task goes to one of them: that one owns the lease
			case f = <-a.in:
			case f = <-b.in:
				owner, leased = b, a
			}
			if f.typ != task.MsgExec {
				t.Fatalf("got message type %d, want the task", f.typ)
			}
			owner.send(t, task.MsgLease, func(b []byte) []byte {
				b = wire.AppendUvarint(b, 7)
				return task.AppendResources(b, &task.Resources{CPU: 1})
			})
			leased.expect(t, task.MsgDirectListen)
			leased.send(t, task.MsgDirectAddr, func(b []byte) []byte { return wire.AppendString(b, "/lease.sock") })
			d := wire.Dec{B: owner.expect(t, task.MsgLeaseReply)}
			rid, id, addr := d.Uvarint(), d.Uvarint(), d.String()
			if d.Err != nil || rid != 7 || id != uint64(leased.id) || addr != "/lease.sock" {
				t.Fatalf("lease reply: request %d, lease %d at %q (%v); want 7, %d, /lease.sock", rid, id, addr, d.Err, leased.id)
			}
			if s := h.n.Snapshot(); s.Available.CPU != 0 {
				t.Fatalf("%g CPUs free while a task and a lease hold both", s.Available.CPU)
			}
			h.check("granted")
			// A second request is refused at once: nothing is free.
			owner.send(t, task.MsgLease, func(b []byte) []byte {
				b = wire.AppendUvarint(b, 8)
				return task.AppendResources(b, &task.Resources{CPU: 1})
			})
			d = wire.Dec{B: owner.expect(t, task.MsgLeaseReply)}
			if rid, _, addr := d.Uvarint(), d.Uvarint(), d.String(); rid != 8 || addr != "" {
				t.Fatalf("second lease: request %d at %q, want 8 refused", rid, addr)
			}
			if end == "returned" {
				owner.send(t, task.MsgLeaseReturn, func(b []byte) []byte { return wire.AppendUvarint(b, id) })
				// A refused request after it is the barrier: handled in order.
				owner.send(t, task.MsgLease, func(b []byte) []byte {
					b = wire.AppendUvarint(b, 9)
					return task.AppendResources(b, &task.Resources{CPU: 5})
				})
				owner.expect(t, task.MsgLeaseReply)
				if s := h.n.Snapshot(); s.Available.CPU != 1 {
					t.Fatalf("%g CPUs free after the lease went back, want 1", s.Available.CPU)
				}
			} else {
				owner.die()
				// Its replacement is started where its death is handled,
				// after its leases ended: a barrier.
				h.worker()
				if s := h.n.Snapshot(); s.Available.CPU != 2 {
					t.Fatalf("%g CPUs free after the owner died, want 2", s.Available.CPU)
				}
			}
			h.check(end)
			// The leased worker serves the pool again (after a death, beside
			// the replacement: two tasks, one each).
			h.submit(value("y"))
			if end == "owner died" {
				h.submit(value("z"))
			}
			got := leased.exec(t)
			leased.result(t, got, "done")
			if o := h.get(got.Return(0)); string(o.Data) != "done" {
				t.Fatalf("a task after the lease ended = %q, %v", o.Data, o.Err)
			}
		})
	}
}
