package sched

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// The chunked queue behaves as a slice would, across chunk edges, under
// random pushes, pops and requeues at the front.
func TestFifoMatchesASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1))
	var q fifo[int]
	var model []int
	next := 0
	contents := func() []int {
		var got []int
		q.each(func(it item[int]) bool { got = append(got, it.t); return true })
		return got
	}
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5: // bursts that cross chunks
			for range rng.IntN(3 * chunkLen / 2) {
				q.push(item[int]{t: next})
				model = append(model, next)
				next++
			}
		case op < 9:
			for k := rng.IntN(chunkLen * 2); k > 0 && len(model) > 0; k-- {
				if f := q.front().t; f != model[0] {
					t.Fatalf("step %d: front %d, want %d", step, f, model[0])
				}
				if p := q.pop().t; p != model[0] {
					t.Fatalf("step %d: popped %d, want %d", step, p, model[0])
				}
				model = model[1:]
			}
		default:
			var ps []item[int]
			var back []int
			for range rng.IntN(chunkLen + 10) {
				ps = append(ps, item[int]{t: next})
				back = append(back, next)
				next++
			}
			q.pushFront(ps)
			model = append(back, model...)
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
		}
		if step%97 == 0 && !slices.Equal(contents(), model) {
			t.Fatalf("step %d: queue %v, want %v", step, contents(), model)
		}
	}
	// each stops when asked.
	n := 0
	q.each(func(item[int]) bool { n++; return n < 3 })
	if len(model) >= 3 && n != 3 {
		t.Fatalf("each went on after false: %d calls", n)
	}
}

// A queued pointer-sized task costs two words of queue, and a chunk fills
// one allocation class (fifo's comment): a field added to the entries
// shows here.
func TestFifoChunkSize(t *testing.T) {
	if got := unsafe.Sizeof(queued[*int]{}); got != 16 {
		t.Errorf("a queue entry is %d bytes, want 16", got)
	}
	if got := unsafe.Sizeof(chunk[*int]{}); got > 4096 {
		t.Errorf("a chunk is %d bytes, want at most 4096", got)
	}
}
