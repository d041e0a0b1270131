package objtable

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
)

func oid(i int) ids.ObjectID { return ids.ObjectID{byte(i), byte(i >> 8), 1} }

func TestLifetimes(t *testing.T) {
	anyone := Holder{}
	w1, a1, p := WorkerHolder(1), ActorHolder(ids.ActorID{9}), ObjectHolder(oid(100))
	tests := []struct {
		name string
		run  func(tb *Table) []bool // the "free" answers, in order
		want []bool
	}{
		{"an unclaimed object is freed by its owner's drop", func(tb *Table) []bool {
			return []bool{tb.Drop(anyone, oid(1))}
		}, []bool{true}},
		{"a task argument outlives the drop", func(tb *Table) []bool {
			tb.Claim(anyone, oid(1), TaskArg)
			return []bool{tb.Drop(anyone, oid(1)), tb.Release(anyone, oid(1), TaskArg)}
		}, []bool{false, true}},
		{"a claim released before the drop frees nothing", func(tb *Table) []bool {
			tb.Claim(anyone, oid(1), Lineage)
			return []bool{tb.Release(anyone, oid(1), Lineage), tb.Drop(anyone, oid(1))}
		}, []bool{false, true}},
		{"each hold takes one more drop", func(tb *Table) []bool {
			tb.Claim(w1, oid(1), Hold)
			tb.Claim(anyone, oid(1), Hold)
			return []bool{tb.Drop(anyone, oid(1)), tb.Drop(w1, oid(1)), tb.Drop(anyone, oid(1))}
		}, []bool{false, false, true}},
		{"a dead worker's holds are returned as drops it owes", func(tb *Table) []bool {
			tb.Claim(w1, oid(1), Hold)
			tb.Claim(w1, oid(1), Hold)
			first := tb.Drop(anyone, oid(1))
			owed := tb.ReleaseHolder(w1)
			out := []bool{first, len(owed) == 2}
			for _, id := range owed {
				out = append(out, tb.Drop(anyone, id))
			}
			return out
		}, []bool{false, true, false, true}},
		{"a container's children go with it", func(tb *Table) []bool {
			tb.Claim(p, oid(1), Contained)
			tb.Claim(p, oid(2), Contained)
			a, b := tb.Drop(anyone, oid(1)), tb.Drop(anyone, oid(2))
			got := tb.ReleaseHolder(p)
			return []bool{a, b, len(got) == 2, tb.Dropped(oid(1)) && !tb.Claimed(oid(1)), !tb.Claimed(oid(2))}
		}, []bool{false, false, true, true, true}},
		{"an actor's keeps end one by one or all at once", func(tb *Table) []bool {
			tb.Claim(a1, oid(1), ActorKeep)
			tb.Claim(a1, oid(2), ActorKeep)
			tb.Drop(anyone, oid(1))
			one := tb.Release(a1, oid(1), ActorKeep)
			rest := tb.ReleaseHolder(a1)
			return []bool{one, tb.Count(a1) == 0, len(rest) == 1 && rest[0] == oid(2)}
		}, []bool{true, true, true}},
		{"a pin keeps the pages, not the object", func(tb *Table) []bool {
			tb.Claim(anyone, oid(1), DriverPin)
			tb.Claim(w1, oid(1), ReadPin)
			return []bool{tb.Pins(oid(1)) == 2, tb.Drop(anyone, oid(1)), tb.Release(w1, oid(1), ReadPin), tb.Release(anyone, oid(1), DriverPin), tb.Pins(oid(1)) == 0}
		}, []bool{true, true, false, false, true}},
		{"an actor's keep is a claim and a pin", func(tb *Table) []bool {
			tb.Claim(a1, oid(1), ActorKeep)
			return []bool{tb.Pins(oid(1)) == 1, tb.Drop(anyone, oid(1)), tb.Release(a1, oid(1), ActorKeep)}
		}, []bool{true, false, true}},
		{"a task's pins end with it", func(tb *Table) []bool {
			task, other := TaskHolder(ids.TaskID{1}), TaskHolder(ids.TaskID{2})
			tb.Claim(task, oid(1), ArgPin)
			tb.Claim(task, oid(2), ArgPin)
			tb.Claim(other, oid(1), ArgPin)
			got := tb.ReleaseKind(task, ArgPin)
			return []bool{len(got) == 2, tb.Pins(oid(1)) == 1, tb.Pins(oid(2)) == 0, tb.ReleaseKind(task, ArgPin) == nil, len(tb.ReleaseKind(other, ArgPin)) == 1}
		}, []bool{true, true, true, true, true}},
		{"a worker's read pins end apart from its holds", func(tb *Table) []bool {
			tb.Claim(w1, oid(1), Hold)
			tb.Claim(w1, oid(1), ReadPin)
			tb.Claim(w1, oid(2), ReadPin)
			pins := tb.ReleaseKind(w1, ReadPin)
			owed := tb.ReleaseKind(w1, Hold)
			return []bool{len(pins) == 2, len(owed) == 1, tb.Count(w1) == 0, tb.Drop(anyone, oid(1)), tb.Drop(anyone, oid(1))}
		}, []bool{true, true, true, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := New()
			got := tc.run(tb)
			if err := tb.Check(nil); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("answers %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("answers %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestCheckFindsBrokenInvariants(t *testing.T) {
	tb := New()
	tb.Release(Holder{}, oid(1), TaskArg)
	if err := tb.Check(nil); err == nil || !strings.Contains(err.Error(), "none is held") {
		t.Fatalf("release without a claim: Check = %v", err)
	}
	tb = New()
	tb.Claim(WorkerHolder(3), oid(1), Hold)
	if err := tb.Check(func(h Holder) bool { return h != WorkerHolder(3) }); err == nil || !strings.Contains(err.Error(), "worker 3 is gone") {
		t.Fatalf("claim by a gone holder: Check = %v", err)
	}
	tb = New()
	tb.Claim(WorkerHolder(3), oid(1), ReadPin)
	tb.Release(WorkerHolder(3), oid(1), ReadPin)
	tb.Release(WorkerHolder(3), oid(1), ReadPin)
	if err := tb.Check(nil); err == nil || !strings.Contains(err.Error(), "read-pin claim released") {
		t.Fatalf("unpinned twice: Check = %v", err)
	}
	tb = New()
	tb.Claim(WorkerHolder(3), oid(1), ReadPin)
	if err := tb.Check(func(h Holder) bool { return h != WorkerHolder(3) }); err == nil || !strings.Contains(err.Error(), "worker 3 is gone") {
		t.Fatalf("a dead worker's pin: Check = %v", err)
	}
	tb.Claim(Holder{}, oid(1), DriverPin)
	if err := tb.CheckPins(func(ids.ObjectID) int { return 1 }); err == nil || !strings.Contains(err.Error(), "2 pins recorded, the store holds 1") {
		t.Fatalf("a pin the store does not hold: CheckPins = %v", err)
	}
	if err := tb.CheckPins(func(ids.ObjectID) int { return 3 }); err != nil {
		t.Fatalf("the store holds more pins (a transfer's, say): CheckPins = %v", err)
	}
}

// Random claims and releases, each later undone, leave the table empty and
// free every object exactly once, after its owner's drop.
func TestRandomClaims(t *testing.T) {
	for seq := range 500 {
		rng := rand.New(rand.NewPCG(uint64(seq), 3))
		tb := New()
		type op struct {
			h Holder
			k Kind
		}
		held := map[ids.ObjectID][]op{}
		freed := map[ids.ObjectID]int{}
		holders := []Holder{{}, WorkerHolder(1), WorkerHolder(2), ActorHolder(ids.ActorID{1}), ObjectHolder(oid(999)), TaskHolder(ids.TaskID{5})}
		pins := map[ids.ObjectID]int{} // what the store would hold
		for range 200 {
			id := oid(rng.IntN(8))
			h := holders[rng.IntN(len(holders))]
			k := Kind(rng.IntN(int(numKinds)))
			if k == Hold {
				continue // holds end by drops, checked in TestLifetimes
			}
			if list := held[id]; len(list) > 0 && rng.IntN(2) == 0 {
				o := list[len(list)-1]
				held[id] = list[:len(list)-1]
				if tb.Release(o.h, id, o.k) {
					freed[id]++
				}
				if o.k.Pin() {
					pins[id]--
				}
			} else {
				tb.Claim(h, id, k)
				held[id] = append(held[id], op{h, k})
				if k.Pin() {
					pins[id]++
				}
			}
			if err := tb.Check(nil); err != nil {
				t.Fatal(err)
			}
			if err := tb.CheckPins(func(id ids.ObjectID) int { return pins[id] }); err != nil || tb.Pins(id) != pins[id] {
				t.Fatalf("seq %d: %d pins on %s, want %d (%v)", seq, tb.Pins(id), id, pins[id], err)
			}
		}
		for i := range 8 {
			id := oid(i)
			if tb.Drop(Holder{}, id) {
				freed[id]++
			}
			for _, o := range held[id] {
				if tb.Release(o.h, id, o.k) {
					freed[id]++
				}
			}
			if freed[id] != 1 {
				t.Fatalf("seq %d: object %d freed %d times, want once", seq, i, freed[id])
			}
			tb.Forget(id)
		}
		if err := tb.Check(nil); err != nil || tb.Len() != 0 {
			t.Fatalf("seq %d: %d objects left at the end (%v)", seq, tb.Len(), err)
		}
	}
}
