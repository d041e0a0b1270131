package direct

import "github.com/gray-ml/gray/runtime/sched"

// lease is one lease the scheduling core granted.
type lease[W, T comparable] struct {
	p        T // the lease as the core's running task on its worker
	owner    W
	req      uint64         // the owner's request, until answered
	id       sched.WorkerID // the leased worker
	answered bool
}

// grant records a lease the core granted and asks its worker to listen;
// the owner is answered with the address (leaseAddr).
func (t *Table[W, T]) grant(e Granted[W, T]) {
	l := &lease[W, T]{p: e.Lease, owner: e.Owner, req: e.Req, id: e.ID}
	t.leased[e.ID], t.leases[e.Lease] = l, l
	if !e.Up {
		// The core hands out connected workers only, and a death reaches
		// it and this table under the node's lock: kept for safety.
		t.end(l)
		return
	}
	t.emit(Effect[W, T]{Kind: Listen, To: e.Worker})
}

// leaseAddr answers the owner of lease l on w, which said where it
// listens: a lease at addr, or none when w could not listen or listens on
// a Unix socket of another machine than the owner's (the lease ends).
func (t *Table[W, T]) leaseAddr(l *lease[W, T], w W, addr string) {
	if l.answered {
		return
	}
	if addr = t.pick(l.owner, w, addr); addr == "" {
		t.end(l)
		return
	}
	l.answered = true
	t.emit(Effect[W, T]{Kind: ReplyLease, To: l.owner, Req: l.req, ID: l.id, Addr: addr})
}

// end ends lease l: its owner is refused if not answered yet, and the
// core takes its worker and resources back.
func (t *Table[W, T]) end(l *lease[W, T]) {
	t.forget(l)
	t.effects = append(t.effects, Effect[W, T]{Kind: EndLease, ID: l.id, Lease: l.p})
}

// forget drops lease l, refusing its owner's request if not answered.
func (t *Table[W, T]) forget(l *lease[W, T]) {
	delete(t.leased, l.id)
	delete(t.leases, l.p)
	if !l.answered {
		l.answered = true
		t.emit(Effect[W, T]{Kind: ReplyLease, To: l.owner, Req: l.req})
	}
}
