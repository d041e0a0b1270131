package sched

import "github.com/gray-ml/gray/runtime/task"

// fifo is a queue of items kept in fixed-size chunks. A million queued
// tasks once lived in one slice: each growth copied the whole queue into
// fresh pages (14% of the driver's CPU while queueing them, issue 22) and
// left up to a quarter of it as slack. Chunks are written once, and a
// drained chunk is kept for the next.
//
// A queue holds one resource shape, so its items' resources are kept once
// (res), not in every slot: a queued pointer-sized task costs 16 bytes of
// queue instead of 24.
type fifo[T any] struct {
	head, tail *chunk[T]
	hi, ti     int // the first item's index in head; one past the last's in tail
	n          int
	spare      *chunk[T]       // a drained chunk, reused by the next push that needs one
	res        *task.Resources // what each queued item asks for (the first push's)
}

// queued is a queued item without its resources (fifo.res).
type queued[T any] struct {
	t    T
	pipe bool
	pack uint8
}

// chunkLen items per chunk: 255 two-word entries and the link fill the
// 4,096-byte size class, so an idle shape's queue costs little and a full
// one a pointer per 255 tasks.
const chunkLen = 255

type chunk[T any] struct {
	items [chunkLen]queued[T]
	next  *chunk[T]
}

func (q *fifo[T]) item(s queued[T]) item[T] {
	return item[T]{t: s.t, res: q.res, pipe: s.pipe, pack: s.pack}
}

func (q *fifo[T]) len() int { return q.n }

func (q *fifo[T]) newChunk() *chunk[T] {
	if c := q.spare; c != nil {
		q.spare = nil
		return c
	}
	return &chunk[T]{}
}

func (q *fifo[T]) push(p item[T]) {
	if q.res == nil {
		q.res = p.res
	}
	switch {
	case q.tail == nil:
		q.head = q.newChunk()
		q.tail, q.hi, q.ti = q.head, 0, 0
	case q.ti == chunkLen:
		c := q.newChunk()
		q.tail.next = c
		q.tail, q.ti = c, 0
	}
	q.tail.items[q.ti] = queued[T]{t: p.t, pipe: p.pipe, pack: p.pack}
	q.ti++
	q.n++
}

// pushFront puts ps before the queued items, in order.
func (q *fifo[T]) pushFront(ps []item[T]) {
	if len(ps) <= q.hi && q.n > 0 { // room before the first item
		q.hi -= len(ps)
		for i, p := range ps {
			q.head.items[q.hi+i] = queued[T]{t: p.t, pipe: p.pipe, pack: p.pack}
		}
		q.n += len(ps)
		return
	}
	old := *q
	*q = fifo[T]{spare: old.spare, res: old.res}
	for _, p := range ps {
		q.push(p)
	}
	old.each(func(it item[T]) bool { q.push(it); return true })
}

func (q *fifo[T]) front() item[T] { return q.item(q.head.items[q.hi]) }

func (q *fifo[T]) pop() item[T] {
	h := q.head
	p := q.item(h.items[q.hi])
	h.items[q.hi] = queued[T]{}
	q.hi++
	q.n--
	switch {
	case q.n == 0: // empty: the chunk stays, from its start
		q.hi, q.ti = 0, 0
		q.tail = h
	case q.hi == chunkLen:
		q.head, q.hi = h.next, 0
		h.next = nil
		q.spare = h
	}
	return p
}

// each calls fn for the queued items in order until it returns false.
func (q *fifo[T]) each(fn func(item[T]) bool) {
	if q.n == 0 {
		return
	}
	for c, i := q.head, q.hi; c != nil; c, i = c.next, 0 {
		end := chunkLen
		if c == q.tail {
			end = q.ti
		}
		for ; i < end; i++ {
			if !fn(q.item(c.items[i])) {
				return
			}
		}
	}
}
