package direct

import "github.com/gray-ml/gray/runtime/ids"

// callee is what the table knows of one actor's direct address.
type callee[W comparable] struct {
	addr  string // where its worker listens, space-separated ("": it could not)
	asked bool   // its worker was asked to listen (Listen)
	said  bool   // its worker answered (Listening)
	// callers were answered with addr: they call it directly. Each
	// counts the answers it has not said it dialled yet (Dialed; drain.go).
	callers map[W]int
	waiters []waiter[W]
}

// waiter is a caller's request for the address, not answered yet.
type waiter[W comparable] struct {
	w   W
	req uint64
}

// calleeOf returns actor id's entry, making it.
func (t *Table[W, T]) calleeOf(id ids.ActorID) *callee[W] {
	c := t.actors[id]
	if c == nil {
		c = &callee[W]{}
		t.actors[id] = c
	}
	return c
}

// ask registers a caller's question and answers it if it can now; an
// actor that cannot be called directly is answered "" at once.
func (t *Table[W, T]) ask(e Ask[W]) {
	if !e.Actor.Direct {
		t.emit(Effect[W, T]{Kind: ReplyAddr, To: e.Caller, Req: e.Req})
		return
	}
	c := t.calleeOf(e.Actor.ID)
	c.waiters = append(c.waiters, waiter[W]{w: e.Caller, req: e.Req})
	t.answer(e.Actor)
}

// answer answers the callers waiting for a's address when it can: once
// a's worker is connected, has run its creation task and has said where
// it listens. Callers of an actor no longer called directly are told to
// go through the driver, and its entry goes, unless callers were given
// its address: then it stays until the actor's process stops (drain.go).
func (t *Table[W, T]) answer(a Actor[W]) {
	c := t.actors[a.ID]
	if c == nil {
		return
	}
	if !a.Direct {
		for _, q := range c.waiters {
			t.emit(Effect[W, T]{Kind: ReplyAddr, To: q.w, Req: q.req})
		}
		c.waiters = nil
		if len(c.callers) == 0 {
			delete(t.actors, a.ID)
		} // else kept until its process stops: they may still be calling (Stopping)
		return
	}
	if len(c.waiters) == 0 || !a.Up {
		return
	}
	if !c.asked {
		c.asked = true
		t.emit(Effect[W, T]{Kind: Listen, To: a.Worker})
	}
	if !c.said || !a.Constructed {
		return
	}
	for _, q := range c.waiters {
		addr := t.pick(q.w, a.Worker, c.addr)
		if addr != "" && !t.ws.Dead(q.w) { // (a dead caller is not answered)
			if c.callers == nil {
				c.callers = map[W]int{}
			}
			c.callers[q.w]++
		}
		t.emit(Effect[W, T]{Kind: ReplyAddr, To: q.w, Req: q.req, Addr: addr})
	}
	c.waiters = nil
}

// Callers returns how many callers were given actor id's address: their
// calls to it bypass the driver (the state API shows the count, since the
// driver sees none of those calls).
func (t *Table[W, T]) Callers(id ids.ActorID) int {
	if c := t.actors[id]; c != nil {
		return len(c.callers)
	}
	return 0
}

// Asking returns how many callers wait for actor id's address (until it
// is constructed and listening): their calls wait in them.
func (t *Table[W, T]) Asking(id ids.ActorID) int {
	if c := t.actors[id]; c != nil {
		return len(c.waiters)
	}
	return 0
}
